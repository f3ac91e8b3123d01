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
import { badRequest, notFound, type ApiError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Page } from '../../shared/pagination.js';
import { findApp, type ApplicationsTable } from '../applications/index.js';
import { KEY_PATTERN, resolveReferences } from './references.js';
import { checkBranch } from '../static-sites/index.js';
import { findSite, type StaticSitesTable } from '../static-sites/index.js';
import type { DeploymentFacts } from '../../shared/runtime/environment.js';
import {
  appEnvVarsInOrder,
  deleteAppEnvVars,
  deleteSiteEnvVars,
  deleteVarRow,
  environmentDefinitions,
  findVarRow,
  insertEnvVars,
  insertVarIfKeyFree,
  listAppEnvVarsPage,
  listGlobalEnvVarsPage,
  listSiteEnvVarsPage,
  siteEnvDefinitions,
  updateVarRow,
  type EnvVarsTable,
  type GlobalEnvVarsTable,
  type StaticSiteEnvVarsTable,
  type VarScope,
} from './storage.js';

export { KEY_PATTERN, MAX_RESOLVED_LENGTH, parseValue, resolveReferences, type Resolution } from './references.js';
export { deleteAppEnvVars } from './storage.js';

export interface CreateInput {
  key: string;
  value: string;
  is_runtime?: boolean;
  is_buildtime?: boolean;
}
export type UpdateInput = Partial<CreateInput>;

export interface SiteCreateInput {
  key: string;
  value: string;
  is_production?: boolean;
  is_preview?: boolean;
  branch?: string;
}
export interface SiteUpdateInput {
  key?: string;
  value?: string;
  is_production?: boolean;
  is_preview?: boolean;
  branch?: string | null;
}

/** What every owner's input has. */
interface VarInput {
  key: string;
  value: string;
}

/** The fields every variable shares, as the API shows them. */
const baseView = (secrets: SecretBox, r: { id: string; key: string; value: string; created_at: string; updated_at: string }) => ({
  id: r.id,
  key: r.key,
  value: secrets.decrypt(r.value),
  created_at: r.created_at,
  updated_at: r.updated_at,
});
const varView = (secrets: SecretBox, r: VarColumns & { id: string; created_at: string; updated_at: string }) => ({
  ...baseView(secrets, r),
  is_runtime: !!r.is_runtime,
  is_buildtime: !!r.is_buildtime,
});
const appView = (secrets: SecretBox, r: EnvVarsTable) => ({ ...varView(secrets, r), app_id: r.app_id });
const globalView = varView;
const siteView = (secrets: SecretBox, r: StaticSiteEnvVarsTable) => ({
  ...baseView(secrets, r),
  static_site_id: r.static_site_id,
  is_production: !!r.is_production,
  is_preview: !!r.is_preview,
  branch: r.branch,
});

type VarColumns = Pick<EnvVarsTable, 'key' | 'value' | 'is_runtime' | 'is_buildtime'>;
type Columns = Record<string, string | number | null>;

function checkKey(key: string): void {
  if (!KEY_PATTERN.test(key))
    throw badRequest(`Invalid key "${key}": use letters, digits and underscores only, not starting with a digit (for example DATABASE_URL)`);
}

/**
 * Where a variable lives: an application's `env_vars` (key unique per app), the company's
 * `global_env_vars` (key unique per company) or a static site's `static_site_env_vars` (key unique
 * per site). The tables share the id/key/value/timestamp columns, so one create/update/delete
 * serves all; each owner adds its own flag columns (`columns` of a new row, `changes` of an update).
 */
interface Owner<I extends VarInput> extends VarScope {
  /** Extra columns of a new row (the owner's company). */
  extra: Record<string, string>;
  what: string;
  duplicate(key: string): ApiError;
  /** The owner's flag columns of a new row (defaults for absent fields). */
  columns(input: I): Columns;
  /** The owner's flag columns an update changes (only fields present in the body). */
  changes(input: Partial<I>): Columns;
}

const flag = (v: boolean | undefined) => (v === false ? 0 : 1);
/** Application and global variables: used at build time and/or at run time. */
const phaseFlags = {
  columns: (i: CreateInput): Columns => ({ is_runtime: flag(i.is_runtime), is_buildtime: flag(i.is_buildtime) }),
  changes: (i: UpdateInput): Columns => ({
    ...(i.is_runtime !== undefined ? { is_runtime: i.is_runtime ? 1 : 0 } : {}),
    ...(i.is_buildtime !== undefined ? { is_buildtime: i.is_buildtime ? 1 : 0 } : {}),
  }),
};

const appOwner = (a: Pick<ApplicationsTable, 'id' | 'company_id'>): Owner<CreateInput> => ({
  table: 'env_vars',
  column: 'app_id',
  id: a.id,
  extra: { company_id: a.company_id },
  what: 'Environment variable',
  duplicate: (key) => badRequest(`An environment variable with key "${key}" already exists on this application`),
  ...phaseFlags,
});
const companyOwner = (companyId: string): Owner<CreateInput> => ({
  table: 'global_env_vars',
  column: 'company_id',
  id: companyId,
  extra: {},
  what: 'Global environment variable',
  duplicate: (key) => badRequest(`A global environment variable with key "${key}" already exists in this company`),
  ...phaseFlags,
});
const siteOwner = (site: Pick<StaticSitesTable, 'id' | 'company_id'>): Owner<SiteCreateInput> => ({
  table: 'static_site_env_vars',
  column: 'static_site_id',
  id: site.id,
  extra: { company_id: site.company_id },
  what: 'Environment variable',
  duplicate: (key) => badRequest(`An environment variable with key "${key}" already exists on this static site`),
  columns: (i) => ({ is_production: flag(i.is_production), is_preview: flag(i.is_preview), branch: checkBranch(i.branch) ?? null }),
  changes: (i: SiteUpdateInput) => ({
    ...(i.is_production !== undefined ? { is_production: i.is_production ? 1 : 0 } : {}),
    ...(i.is_preview !== undefined ? { is_preview: i.is_preview ? 1 : 0 } : {}),
    ...(i.branch !== undefined ? { branch: checkBranch(i.branch ?? undefined) ?? null } : {}),
  }),
});

/** A unique index refused the row (another variable of the owner has the key). */
function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/** The changed columns of an update (only fields present in the body). */
function changes<I extends VarInput>(secrets: SecretBox, o: Owner<I>, input: Partial<I>) {
  const set: Columns = { ...o.changes(input) };
  if (input.key !== undefined) set.key = input.key;
  if (input.value !== undefined) set.value = secrets.encrypt(input.value);
  if (Object.keys(set).length) set.updated_at = new Date().toISOString();
  return set;
}

async function findVar<T>(tx: Tx, o: Owner<VarInput>, id: string): Promise<T> {
  const r = await findVarRow(tx, o, id);
  if (!r) throw notFound(o.what);
  return r as T;
}

async function createVar<T, I extends VarInput>(tx: Tx, secrets: SecretBox, o: Owner<I>, input: I): Promise<T> {
  checkKey(input.key);
  const now = new Date().toISOString();
  const row = {
    id: newId(),
    [o.column]: o.id,
    ...o.extra,
    key: input.key,
    value: secrets.encrypt(input.value),
    ...o.columns(input),
    created_at: now,
    updated_at: now,
  };
  // The unique index on (owner, key) decides: no separate look-up, no race.
  if (!(await insertVarIfKeyFree(tx, o, row))) throw o.duplicate(input.key);
  return row as T;
}

async function updateVar<T extends { key: string }, I extends VarInput>(tx: Tx, secrets: SecretBox, o: Owner<I>, id: string, input: Partial<I>): Promise<T> {
  const current = await findVar<T>(tx, o as unknown as Owner<VarInput>, id);
  if (input.key !== undefined) checkKey(input.key);
  const set = changes(secrets, o, input);
  if (!Object.keys(set).length) return current;
  try {
    await updateVarRow(tx, o, id, set);
  } catch (e) {
    if (isUniqueViolation(e)) throw o.duplicate(input.key ?? current.key);
    throw e;
  }
  return { ...current, ...set };
}

async function deleteVar<I extends VarInput>(tx: Tx, o: Owner<I>, id: string) {
  if (!(await deleteVarRow(tx, o, id))) throw notFound(o.what);
  return { message: `${o.what} deleted` };
}

// ---------------------------------------------------------------- app-level variables

export async function listAppEnvVars(ctx: CallContext, appId: string, page: Page) {
  const { tx, app } = ctx;
  const { secrets } = app;
  await findApp(ctx, appId);
  const res = await listAppEnvVarsPage(tx, appId, page);
  return { ...res, data: res.data.map((r) => appView(secrets, r)) };
}

export async function createAppEnvVar(ctx: CallContext, appId: string, input: CreateInput) {
  const { secrets } = ctx.app;
  const a = await findApp(ctx, appId);
  return appView(secrets, await createVar<EnvVarsTable, CreateInput>(ctx.tx, secrets, appOwner(a), input));
}

export async function updateAppEnvVar(ctx: CallContext, appId: string, id: string, input: UpdateInput) {
  const { secrets } = ctx.app;
  const a = await findApp(ctx, appId);
  return appView(secrets, await updateVar<EnvVarsTable, CreateInput>(ctx.tx, secrets, appOwner(a), id, input));
}

export async function deleteAppEnvVar(ctx: CallContext, appId: string, id: string) {
  return deleteVar(ctx.tx, appOwner(await findApp(ctx, appId)), id);
}

// ---------------------------------------------------------------- global variables

export async function listGlobalEnvVars({ tx, app, companyId }: CallContext, page: Page) {
  const { secrets } = app;
  const res = await listGlobalEnvVarsPage(tx, companyId, page);
  return { ...res, data: res.data.map((r) => globalView(secrets, r)) };
}

export async function createGlobalEnvVar({ tx, app, companyId }: CallContext, input: CreateInput) {
  return globalView(app.secrets, await createVar<GlobalEnvVarsTable, CreateInput>(tx, app.secrets, companyOwner(companyId), input));
}

export async function updateGlobalEnvVar({ tx, app, companyId }: CallContext, id: string, input: UpdateInput) {
  return globalView(app.secrets, await updateVar<GlobalEnvVarsTable, CreateInput>(tx, app.secrets, companyOwner(companyId), id, input));
}

export async function deleteGlobalEnvVar({ tx, companyId }: CallContext, id: string) {
  return deleteVar(tx, companyOwner(companyId), id);
}

// ---------------------------------------------------------------- static sites' variables

export async function listSiteEnvVars(ctx: CallContext, siteId: string, page: Page) {
  const { tx, app } = ctx;
  await findSite(ctx, siteId);
  const res = await listSiteEnvVarsPage(tx, siteId, page);
  return { ...res, data: res.data.map((r) => siteView(app.secrets, r)) };
}

export async function createSiteEnvVar(ctx: CallContext, siteId: string, input: SiteCreateInput) {
  const { secrets } = ctx.app;
  const site = await findSite(ctx, siteId);
  return siteView(secrets, await createVar<StaticSiteEnvVarsTable, SiteCreateInput>(ctx.tx, secrets, siteOwner(site), input));
}

export async function updateSiteEnvVar(ctx: CallContext, siteId: string, id: string, input: SiteUpdateInput) {
  const { secrets } = ctx.app;
  const site = await findSite(ctx, siteId);
  return siteView(secrets, await updateVar<StaticSiteEnvVarsTable, SiteCreateInput>(ctx.tx, secrets, siteOwner(site), id, input as Partial<SiteCreateInput>));
}

export async function deleteSiteEnvVar(ctx: CallContext, siteId: string, id: string) {
  return deleteVar(ctx.tx, siteOwner(await findSite(ctx, siteId)), id);
}

// ---------------------------------------------------------------- the application's life

/** Copies variables to a clone and removes them with their application or static site (applications/signals.ts, static-sites/signals.ts). */
export function registerLifecycle(app: AppContext): void {
  app.events.on('application.created', async (tx, { application, clonedFrom }) => {
    if (clonedFrom) await copyEnvVars(tx, clonedFrom.id, application.id, application.company_id);
  });
  app.events.on('application.removed', (tx, { application }) => deleteAppEnvVars(tx, application.id));
  app.events.on('static-site.removed', (tx, { site }) => deleteSiteEnvVars(tx, site.id));
}

/**
 * Clone: copies the app-level variables of `fromAppId` (of `companyId`) to `toAppId`, which must
 * already exist. Values are copied sealed (same key, no decryption); each copy gets a new id and
 * keeps its source's created_at so the clone lists its variables in the same order. Global
 * variables are company-wide and need no copy.
 */
export async function copyEnvVars(tx: Tx, fromAppId: string, toAppId: string, companyId: string): Promise<void> {
  const rows = await appEnvVarsInOrder(tx, fromAppId, companyId);
  const now = new Date().toISOString();
  const copies: EnvVarsTable[] = rows.map((r) => ({ ...r, id: newId(), app_id: toAppId, company_id: companyId, updated_at: now }));
  await insertEnvVars(tx, copies);
}

/**
 * The injected system variables: `<PREFIX>_...` with PREFIX = prefix.toUpperCase() (`SVL_` by
 * default), plus PORT=8080. A fact the deployment does not have (no commit for an image
 * deployment, no initiating user for a hook) is an empty string: the variable is always present.
 */
export function systemVariables(prefix: string, a: Pick<ApplicationsTable, 'id' | 'company_id' | 'name'>, d: DeploymentFacts): Record<string, string> {
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
  const rows = await environmentDefinitions(tx, application.company_id, application.id);
  const defs = new Map<string, (typeof rows)[number]>();
  for (const r of rows) defs.set(r.key, r);
  return resolveDefinitions(
    secrets,
    [...defs.values()].filter((d) => (phase === 'build' ? d.is_buildtime : d.is_runtime)),
    system,
  );
}

/**
 * The build environment of a static site's deployment: the site's variables meant for its kind
 * (`is_production` or `is_preview`) whose branch scope is empty or the deployment's branch, then
 * `system` (which wins); `${key}` references resolved as for applications (no global variables:
 * they belong to applications). Problems are reported, never thrown.
 */
export async function resolveSiteEnvironment(
  { tx, app: { secrets } }: CallContext,
  site: Pick<StaticSitesTable, 'id' | 'company_id'>,
  build: { is_preview: boolean; branch: string | null },
  system: Record<string, string>,
): Promise<{ vars: Record<string, string>; problems: string[] }> {
  const own = await siteEnvDefinitions(tx, site.id, site.company_id);
  const used = own.filter((v) => (build.is_preview ? v.is_preview : v.is_production) && (v.branch === null || v.branch === build.branch));
  return resolveDefinitions(secrets, used, system);
}

/** Decrypts the definitions (in order), lays `system` over them and resolves `${key}` references. */
function resolveDefinitions(secrets: SecretBox, defs: { key: string; value: string }[], system: Record<string, string>) {
  const problems: string[] = [];
  const merged = new Map<string, string>();
  for (const d of defs) {
    try {
      merged.set(d.key, secrets.decrypt(d.value));
    } catch {
      problems.push(`${d.key} could not be decrypted (was the secret key changed?) and was left out`);
    }
  }
  for (const [key, value] of Object.entries(system)) {
    if (merged.has(key)) problems.push(`${key} is set by the platform; the defined value is replaced by the system value`);
    merged.set(key, value);
  }
  const r = resolveReferences(Object.fromEntries(merged), new Set(Object.keys(system)));
  return { vars: r.vars, problems: [...problems, ...r.problems] };
}
