// Environment variables: app-level variables (unique key per application) and global variables
// (unique key per company, inherited by every application of the company). Values are sealed with
// app.secrets before they reach the database and opened only to answer the API or to build a
// deployment's environment.
//
// Keys must match KEY_PATTERN (letters, digits, underscore; not starting with a digit) — the POSIX
// portable name set, so every key can be exported to a process and referenced as `${key}`. Anything
// else is a 400 (the contract itself only bounds the length, 1..255). Keys are case-sensitive and
// compared exactly (`foo` and `FOO` are different variables).
import type { SecretBox } from '../../shared/crypto.js';
import type { Tx } from '../../shared/db/index.js';
import { badRequest, notFound } from '../../shared/errors.js';
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

const appView = (secrets: SecretBox, r: EnvVarsTable) => ({
  id: r.id,
  app_id: r.app_id,
  key: r.key,
  value: secrets.decrypt(r.value),
  is_runtime: !!r.is_runtime,
  is_buildtime: !!r.is_buildtime,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

const globalView = (secrets: SecretBox, r: GlobalEnvVarsTable) => ({
  id: r.id,
  key: r.key,
  value: secrets.decrypt(r.value),
  is_runtime: !!r.is_runtime,
  is_buildtime: !!r.is_buildtime,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

function checkKey(key: string): void {
  if (!KEY_PATTERN.test(key))
    throw badRequest(`Invalid key "${key}": use letters, digits and underscores only, not starting with a digit (for example DATABASE_URL)`);
}

const duplicateApp = (key: string) => badRequest(`An environment variable with key "${key}" already exists on this application`);
const duplicateGlobal = (key: string) => badRequest(`A global environment variable with key "${key}" already exists in this company`);

/** A unique index refused the row (a concurrent request took the key between check and write). */
function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/** The changed columns of an update (only fields present in the body). */
function changes(secrets: SecretBox, input: UpdateInput) {
  const set: Partial<Pick<EnvVarsTable, 'key' | 'value' | 'is_runtime' | 'is_buildtime' | 'updated_at'>> = {};
  if (input.key !== undefined) set.key = input.key;
  if (input.value !== undefined) set.value = secrets.encrypt(input.value);
  if (input.is_runtime !== undefined) set.is_runtime = input.is_runtime ? 1 : 0;
  if (input.is_buildtime !== undefined) set.is_buildtime = input.is_buildtime ? 1 : 0;
  if (Object.keys(set).length) set.updated_at = new Date().toISOString();
  return set;
}

// ---------------------------------------------------------------- app-level variables

async function findAppVar(tx: Tx, appId: string, id: string): Promise<EnvVarsTable> {
  const r = await tx.selectFrom('env_vars').selectAll().where('id', '=', id).where('app_id', '=', appId).executeTakeFirst();
  if (!r) throw notFound('Environment variable');
  return r;
}

async function appKeyTaken(tx: Tx, appId: string, key: string, except?: string): Promise<boolean> {
  let q = tx.selectFrom('env_vars').select('id').where('app_id', '=', appId).where('key', '=', key);
  if (except) q = q.where('id', '!=', except);
  return !!(await q.executeTakeFirst());
}

export async function listAppEnvVars(tx: Tx, secrets: SecretBox, companyId: string, appId: string, page: Page) {
  await findApp(tx, companyId, appId);
  const res = await paginate(tx.selectFrom('env_vars').selectAll().where('app_id', '=', appId), page);
  return { ...res, data: res.data.map((r) => appView(secrets, r)) };
}

export async function createAppEnvVar(tx: Tx, secrets: SecretBox, companyId: string, appId: string, input: CreateInput) {
  const app = await findApp(tx, companyId, appId);
  checkKey(input.key);
  if (await appKeyTaken(tx, app.id, input.key)) throw duplicateApp(input.key);
  const now = new Date().toISOString();
  const row: EnvVarsTable = {
    id: newId(),
    company_id: app.company_id,
    app_id: app.id,
    key: input.key,
    value: secrets.encrypt(input.value),
    is_runtime: input.is_runtime === false ? 0 : 1,
    is_buildtime: input.is_buildtime === false ? 0 : 1,
    created_at: now,
    updated_at: now,
  };
  const inserted = await tx
    .insertInto('env_vars')
    .values(row)
    .onConflict((oc) => oc.columns(['app_id', 'key']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) throw duplicateApp(input.key);
  return appView(secrets, row);
}

export async function updateAppEnvVar(tx: Tx, secrets: SecretBox, companyId: string, appId: string, id: string, input: UpdateInput) {
  await findApp(tx, companyId, appId);
  const current = await findAppVar(tx, appId, id);
  if (input.key !== undefined) {
    checkKey(input.key);
    if (input.key !== current.key && (await appKeyTaken(tx, appId, input.key, id))) throw duplicateApp(input.key);
  }
  const set = changes(secrets, input);
  if (!Object.keys(set).length) return appView(secrets, current);
  try {
    await tx.updateTable('env_vars').set(set).where('id', '=', id).execute();
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicateApp(input.key ?? current.key);
    throw e;
  }
  return appView(secrets, { ...current, ...set });
}

export async function deleteAppEnvVar(tx: Tx, companyId: string, appId: string, id: string) {
  await findApp(tx, companyId, appId);
  const res = await tx.deleteFrom('env_vars').where('id', '=', id).where('app_id', '=', appId).executeTakeFirst();
  if (!Number(res.numDeletedRows)) throw notFound('Environment variable');
  return { message: 'Environment variable deleted' };
}

// ---------------------------------------------------------------- global variables

async function findGlobalVar(tx: Tx, companyId: string, id: string): Promise<GlobalEnvVarsTable> {
  const r = await tx.selectFrom('global_env_vars').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
  if (!r) throw notFound('Global environment variable');
  return r;
}

async function globalKeyTaken(tx: Tx, companyId: string, key: string, except?: string): Promise<boolean> {
  let q = tx.selectFrom('global_env_vars').select('id').where('company_id', '=', companyId).where('key', '=', key);
  if (except) q = q.where('id', '!=', except);
  return !!(await q.executeTakeFirst());
}

export async function listGlobalEnvVars(tx: Tx, secrets: SecretBox, companyId: string, page: Page) {
  const res = await paginate(tx.selectFrom('global_env_vars').selectAll().where('company_id', '=', companyId), page);
  return { ...res, data: res.data.map((r) => globalView(secrets, r)) };
}

export async function createGlobalEnvVar(tx: Tx, secrets: SecretBox, companyId: string, input: CreateInput) {
  checkKey(input.key);
  if (await globalKeyTaken(tx, companyId, input.key)) throw duplicateGlobal(input.key);
  const now = new Date().toISOString();
  const row: GlobalEnvVarsTable = {
    id: newId(),
    company_id: companyId,
    key: input.key,
    value: secrets.encrypt(input.value),
    is_runtime: input.is_runtime === false ? 0 : 1,
    is_buildtime: input.is_buildtime === false ? 0 : 1,
    created_at: now,
    updated_at: now,
  };
  const inserted = await tx
    .insertInto('global_env_vars')
    .values(row)
    .onConflict((oc) => oc.columns(['company_id', 'key']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) throw duplicateGlobal(input.key);
  return globalView(secrets, row);
}

export async function updateGlobalEnvVar(tx: Tx, secrets: SecretBox, companyId: string, id: string, input: UpdateInput) {
  const current = await findGlobalVar(tx, companyId, id);
  if (input.key !== undefined) {
    checkKey(input.key);
    if (input.key !== current.key && (await globalKeyTaken(tx, companyId, input.key, id))) throw duplicateGlobal(input.key);
  }
  const set = changes(secrets, input);
  if (!Object.keys(set).length) return globalView(secrets, current);
  try {
    await tx.updateTable('global_env_vars').set(set).where('id', '=', id).execute();
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicateGlobal(input.key ?? current.key);
    throw e;
  }
  return globalView(secrets, { ...current, ...set });
}

export async function deleteGlobalEnvVar(tx: Tx, companyId: string, id: string) {
  const res = await tx.deleteFrom('global_env_vars').where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
  if (!Number(res.numDeletedRows)) throw notFound('Global environment variable');
  return { message: 'Global environment variable deleted' };
}

// ---------------------------------------------------------------- used by the applications module

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
export function systemVariables(prefix: string, app: ApplicationsTable, d: DeploymentFacts): Record<string, string> {
  const P = prefix.toUpperCase();
  return {
    [`${P}_COMPANY_ID`]: app.company_id,
    [`${P}_APP_ID`]: app.id,
    [`${P}_APP_NAME`]: app.name,
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
  tx: Tx,
  secrets: SecretBox,
  app: ApplicationsTable,
  system: Record<string, string>,
  phase: 'build' | 'runtime',
): Promise<{ vars: Record<string, string>; problems: string[] }> {
  const globals = await tx
    .selectFrom('global_env_vars')
    .select(['key', 'value', 'is_runtime', 'is_buildtime'])
    .where('company_id', '=', app.company_id)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const own = await tx
    .selectFrom('env_vars')
    .select(['key', 'value', 'is_runtime', 'is_buildtime'])
    .where('app_id', '=', app.id)
    .where('company_id', '=', app.company_id)
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
