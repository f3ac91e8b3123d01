// Environment variables: app-level variables (unique key per application) and global variables
// (unique key per company, inherited by every application of the company). Values are sealed with
// app.secrets before they reach the database and opened only to answer the API or to build a
// deployment's environment.
//
// Keys must match KEY_PATTERN (letters, digits, underscore; not starting with a digit) — the POSIX
// portable name set, so every key can be exported to a process and referenced as `${key}`. Anything
// else is a 400 (the contract itself only bounds the length, 1..255). Keys are case-sensitive and
// compared exactly (`foo` and `FOO` are different variables).
import type { AppContext, CallContext } from '../../shared/context.js';
import type { SecretBox } from '../../shared/crypto.js';
import type { Tx } from '../../shared/db/index.js';
import type { Kysely } from 'kysely';
import { badRequest, notFound, type ApiError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { paginate, type Page } from '../../shared/pagination.js';
import { findApp, type ApplicationsTable } from '../applications/storage.js';
import { KEY_PATTERN, resolveReferences } from './references.js';
import type { EnvVarsTable, GlobalEnvVarsTable } from './storage.js';

export { KEY_PATTERN, MAX_RESOLVED_LENGTH, parseValue, resolveReferences, type Resolution } from './references.js';

export interface CreateInput {
  key: string;
  value: string;
  is_runtime?: boolean;
  is_buildtime?: boolean;
}
export type UpdateInput = Partial<CreateInput>;

/** The fields every variable shares, as the API shows them. */
const varView = (secrets: SecretBox, r: VarColumns & { id: string; created_at: string; updated_at: string }) => ({
  id: r.id,
  key: r.key,
  value: secrets.decrypt(r.value),
  is_runtime: !!r.is_runtime,
  is_buildtime: !!r.is_buildtime,
  created_at: r.created_at,
  updated_at: r.updated_at,
});
const appView = (secrets: SecretBox, r: EnvVarsTable) => ({ ...varView(secrets, r), app_id: r.app_id });
const globalView = varView;

type VarColumns = Pick<EnvVarsTable, 'key' | 'value' | 'is_runtime' | 'is_buildtime'>;

function checkKey(key: string): void {
  if (!KEY_PATTERN.test(key))
    throw badRequest(`Invalid key "${key}": use letters, digits and underscores only, not starting with a digit (for example DATABASE_URL)`);
}

/**
 * Where a variable lives: an application's `env_vars` (key unique per app) or the company's
 * `global_env_vars` (key unique per company). Both tables share the variable columns, so one
 * create/update/delete serves both.
 */
interface Owner {
  table: 'env_vars' | 'global_env_vars';
  /** The column and value that scope the variables (and their unique keys). */
  column: 'app_id' | 'company_id';
  id: string;
  /** Extra columns of a new row (the app's company). */
  extra: Record<string, string>;
  what: string;
  duplicate(key: string): ApiError;
}

const appOwner = (a: Pick<ApplicationsTable, 'id' | 'company_id'>): Owner => ({
  table: 'env_vars',
  column: 'app_id',
  id: a.id,
  extra: { company_id: a.company_id },
  what: 'Environment variable',
  duplicate: (key) => badRequest(`An environment variable with key "${key}" already exists on this application`),
});
const companyOwner = (companyId: string): Owner => ({
  table: 'global_env_vars',
  column: 'company_id',
  id: companyId,
  extra: {},
  what: 'Global environment variable',
  duplicate: (key) => badRequest(`A global environment variable with key "${key}" already exists in this company`),
});

/** The two tables differ only in their scope column; queries are written once against either. */
const untyped = (tx: Tx) => tx as unknown as Kysely<any>;

/** A unique index refused the row (another variable of the owner has the key). */
function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/** The changed columns of an update (only fields present in the body). */
function changes(secrets: SecretBox, input: UpdateInput) {
  const set: Partial<VarColumns & { updated_at: string }> = {};
  if (input.key !== undefined) set.key = input.key;
  if (input.value !== undefined) set.value = secrets.encrypt(input.value);
  if (input.is_runtime !== undefined) set.is_runtime = input.is_runtime ? 1 : 0;
  if (input.is_buildtime !== undefined) set.is_buildtime = input.is_buildtime ? 1 : 0;
  if (Object.keys(set).length) set.updated_at = new Date().toISOString();
  return set;
}

async function findVar<T>(tx: Tx, o: Owner, id: string): Promise<T> {
  const r = await untyped(tx).selectFrom(o.table).selectAll().where('id', '=', id).where(o.column, '=', o.id).executeTakeFirst();
  if (!r) throw notFound(o.what);
  return r as T;
}

async function createVar<T>(tx: Tx, secrets: SecretBox, o: Owner, input: CreateInput): Promise<T> {
  checkKey(input.key);
  const now = new Date().toISOString();
  const row = {
    id: newId(),
    [o.column]: o.id,
    ...o.extra,
    key: input.key,
    value: secrets.encrypt(input.value),
    is_runtime: input.is_runtime === false ? 0 : 1,
    is_buildtime: input.is_buildtime === false ? 0 : 1,
    created_at: now,
    updated_at: now,
  };
  // The unique index on (owner, key) decides: no separate look-up, no race.
  const inserted = await untyped(tx).insertInto(o.table).values(row).onConflict((oc) => oc.columns([o.column, 'key']).doNothing()).returning('id').executeTakeFirst();
  if (!inserted) throw o.duplicate(input.key);
  return row as T;
}

async function updateVar<T extends VarColumns>(tx: Tx, secrets: SecretBox, o: Owner, id: string, input: UpdateInput): Promise<T> {
  const current = await findVar<T>(tx, o, id);
  if (input.key !== undefined) checkKey(input.key);
  const set = changes(secrets, input);
  if (!Object.keys(set).length) return current;
  try {
    await untyped(tx).updateTable(o.table).set(set).where('id', '=', id).execute();
  } catch (e) {
    if (isUniqueViolation(e)) throw o.duplicate(input.key ?? current.key);
    throw e;
  }
  return { ...current, ...set };
}

async function deleteVar(tx: Tx, o: Owner, id: string) {
  const res = await untyped(tx).deleteFrom(o.table).where('id', '=', id).where(o.column, '=', o.id).executeTakeFirst();
  if (!Number(res.numDeletedRows)) throw notFound(o.what);
  return { message: `${o.what} deleted` };
}

// ---------------------------------------------------------------- app-level variables

export async function listAppEnvVars(ctx: CallContext, appId: string, page: Page) {
  const { tx, app } = ctx;
  const { secrets } = app;
  await findApp(ctx, appId);
  const res = await paginate(tx.selectFrom('env_vars').selectAll().where('app_id', '=', appId), page);
  return { ...res, data: res.data.map((r) => appView(secrets, r)) };
}

export async function createAppEnvVar(ctx: CallContext, appId: string, input: CreateInput) {
  const { secrets } = ctx.app;
  const a = await findApp(ctx, appId);
  return appView(secrets, await createVar<EnvVarsTable>(ctx.tx, secrets, appOwner(a), input));
}

export async function updateAppEnvVar(ctx: CallContext, appId: string, id: string, input: UpdateInput) {
  const { secrets } = ctx.app;
  const a = await findApp(ctx, appId);
  return appView(secrets, await updateVar<EnvVarsTable>(ctx.tx, secrets, appOwner(a), id, input));
}

export async function deleteAppEnvVar(ctx: CallContext, appId: string, id: string) {
  return deleteVar(ctx.tx, appOwner(await findApp(ctx, appId)), id);
}

// ---------------------------------------------------------------- global variables

export async function listGlobalEnvVars({ tx, app, companyId }: CallContext, page: Page) {
  const { secrets } = app;
  const res = await paginate(tx.selectFrom('global_env_vars').selectAll().where('company_id', '=', companyId), page);
  return { ...res, data: res.data.map((r) => globalView(secrets, r)) };
}

export async function createGlobalEnvVar({ tx, app, companyId }: CallContext, input: CreateInput) {
  return globalView(app.secrets, await createVar<GlobalEnvVarsTable>(tx, app.secrets, companyOwner(companyId), input));
}

export async function updateGlobalEnvVar({ tx, app, companyId }: CallContext, id: string, input: UpdateInput) {
  return globalView(app.secrets, await updateVar<GlobalEnvVarsTable>(tx, app.secrets, companyOwner(companyId), id, input));
}

export async function deleteGlobalEnvVar({ tx, companyId }: CallContext, id: string) {
  return deleteVar(tx, companyOwner(companyId), id);
}

// ---------------------------------------------------------------- the application's life

/** Copies variables to a clone and removes them with their application (applications/signals.ts). */
export function registerLifecycle(app: AppContext): void {
  app.events.on('application.created', async (tx, { application, clonedFrom }) => {
    if (clonedFrom) await copyEnvVars(tx, clonedFrom.id, application.id, application.company_id);
  });
  app.events.on('application.removed', (tx, { application }) => deleteAppEnvVars(tx, application.id));
}

/**
 * Clone: copies the app-level variables of `fromAppId` (of `companyId`) to `toAppId`, which must
 * already exist. Values are copied sealed (same key, no decryption); each copy gets a new id and
 * keeps its source's created_at so the clone lists its variables in the same order. Global
 * variables are company-wide and need no copy.
 */
export async function copyEnvVars(tx: Tx, fromAppId: string, toAppId: string, companyId: string): Promise<void> {
  const rows = await tx
    .selectFrom('env_vars')
    .selectAll()
    .where('app_id', '=', fromAppId)
    .where('company_id', '=', companyId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const now = new Date().toISOString();
  const copies: EnvVarsTable[] = rows.map((r) => ({ ...r, id: newId(), app_id: toAppId, company_id: companyId, updated_at: now }));
  for (let i = 0; i < copies.length; i += 100) await tx.insertInto('env_vars').values(copies.slice(i, i + 100)).execute();
}

/** Removes every app-level variable of an application (application deletion). */
export async function deleteAppEnvVars(tx: Tx, appId: string): Promise<void> {
  await tx.deleteFrom('env_vars').where('app_id', '=', appId).execute();
}

export interface DeploymentFacts {
  id: string;
  initiated_by: string | null;
  trigger: string;
  commit_sha: string | null;
  branch: string | null;
  docker_image_url: string | null;
}

/**
 * The injected system variables: `<PREFIX>_...` with PREFIX = prefix.toUpperCase() (`SVL_` by
 * default), plus PORT=8080. A fact the deployment does not have (no commit for an image
 * deployment, no initiating user for a hook) is an empty string: the variable is always present.
 */
export function systemVariables(prefix: string, a: ApplicationsTable, d: DeploymentFacts): Record<string, string> {
  const P = prefix.toUpperCase();
  return {
    [`${P}_COMPANY_ID`]: a.company_id,
    [`${P}_APP_ID`]: a.id,
    [`${P}_APP_NAME`]: a.name,
    [`${P}_DEPLOYMENT_ID`]: d.id,
    [`${P}_DEPLOYMENT_INITIATED_BY`]: d.initiated_by ?? '',
    [`${P}_DEPLOYMENT_TRIGGER`]: d.trigger,
    [`${P}_DEPLOYMENT_COMMIT_SHA`]: d.commit_sha ?? '',
    [`${P}_DEPLOYMENT_BRANCH`]: d.branch ?? '',
    [`${P}_DEPLOYMENT_DOCKER_IMAGE`]: d.docker_image_url ?? '',
    PORT: '8080',
  };
}

/**
 * The environment of one phase of a deployment. Precedence: global variables, then app-level
 * variables, then `system` (which wins). An app-level variable replaces the global one of the same
 * key entirely, flags included: a global FOO does not reappear at build time because the app's FOO
 * is runtime-only. After merging, only variables flagged for `phase` (is_buildtime / is_runtime)
 * take part; `${key}` references are resolved against that set (see references.ts for the
 * grammar), system values are never scanned for references. Never throws for bad data: unknown
 * references, cycles, overlong results, values that cannot be decrypted and user variables shadowed
 * by system variables are reported in `problems` (human-readable, suitable for deployment logs).
 */
export async function resolveEnvironment(
  { tx, app: { secrets } }: CallContext,
  application: ApplicationsTable,
  system: Record<string, string>,
  phase: 'build' | 'runtime',
): Promise<{ vars: Record<string, string>; problems: string[] }> {
  const globals = await tx
    .selectFrom('global_env_vars')
    .select(['key', 'value', 'is_runtime', 'is_buildtime'])
    .where('company_id', '=', application.company_id)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const own = await tx
    .selectFrom('env_vars')
    .select(['key', 'value', 'is_runtime', 'is_buildtime'])
    .where('app_id', '=', application.id)
    .where('company_id', '=', application.company_id)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const defs = new Map<string, (typeof own)[number]>();
  for (const g of globals) defs.set(g.key, g);
  for (const a of own) defs.set(a.key, a);

  const problems: string[] = [];
  const merged = new Map<string, string>();
  for (const [key, d] of defs) {
    if (!(phase === 'build' ? d.is_buildtime : d.is_runtime)) continue;
    try {
      merged.set(key, secrets.decrypt(d.value));
    } catch {
      problems.push(`${key} could not be decrypted (was the secret key changed?) and was left out`);
    }
  }
  for (const [key, value] of Object.entries(system)) {
    if (merged.has(key)) problems.push(`${key} is set by the platform; the defined value is replaced by the system value`);
    merged.set(key, value);
  }
  const r = resolveReferences(Object.fromEntries(merged), new Set(Object.keys(system)));
  return { vars: r.vars, problems: [...problems, ...r.problems] };
}
