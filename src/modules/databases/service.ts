// Databases: create (asynchronous: creating -> ready), read, update, suspend/activate, password
// reset, restart, deletion, external access and IP restriction, internal connections and metrics.
import { randomBytes } from 'node:crypto';
import type { CallContext } from '../../shared/context.js';
import { ApiError, badRequest } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { cancelJobs } from '../../shared/jobs.js';
import { ipList } from '../../shared/net.js';
import type { Page } from '../../shared/pagination.js';
import type { ServiceSummary } from '../../shared/services.js';
import { placeService } from '../projects/index.js';
import { CLUSTER_BY_ID, DATABASE_RESOURCE_TYPE_BY_ID, DATABASE_RESOURCE_TYPES } from '../resources/index.js';
import { failPendingBackups } from './backups-storage.js';
import { stepBackup } from './backups.js';
import { serverUsage, syncServer } from './real.js';
import { armDailyBackup } from './schedule.js';
import { runtimes } from './runtime/index.js';
import { runtimeState, type RuntimeState } from './runtime/state.js';
import { assertNotDeleting, findDatabase, lockDatabase, noteRead, startOperation } from './operations.js';
import {
  deleteConnectionRow,
  findDatabaseEndpoint,
  hasConnectionTo,
  insertConnection,
  insertNamedDatabase,
  listConnectionRows,
  listDatabasesPage,
  listDatabaseSummaries,
  listServerUsers,
  lockServerUser,
  updateDatabaseColumns,
  type DatabaseMetric,
  type DatabasesTable,
  type DatabaseType,
} from './storage.js';
import { bool, databaseDetailView, databaseView, ipRestrictionView } from './views.js';

/** Engine versions a database can be created with (the contract does not enumerate them). */
const ENGINE_VERSIONS: Record<Exclude<DatabaseType, 'mongodb'>, readonly string[]> = {
  postgresql: ['13', '14', '15', '16', '17'],
  mysql: ['8.0', '8.4', '9'],
  mariadb: ['10.6', '10.11', '11.4'],
  redis: ['7', '7.2'],
  valkey: ['7.2', '8'],
};
const PORTS: Record<DatabaseType, string> = { postgresql: '5432', mysql: '3306', mariadb: '3306', mongodb: '27017', redis: '6379', valkey: '6379' };

export async function listDatabases({ tx, companyId, scope }: CallContext, page: Page) {
  const res = await listDatabasesPage(tx, companyId, scope, page);
  return {
    ...res,
    data: res.data.map(({ resource_type_id, ...r }) => ({
      ...r,
      is_suspended: bool(r.is_suspended),
      resource_type_name: DATABASE_RESOURCE_TYPE_BY_ID.get(resource_type_id)?.name ?? null,
    })),
  };
}

function checkResourceType(id: string) {
  if (!DATABASE_RESOURCE_TYPE_BY_ID.has(id))
    throw badRequest(`Unknown resource_type_id ${id}; see GET /resources/database-resource-types (e.g. ${DATABASE_RESOURCE_TYPES[0]!.id})`);
}

interface CreateInput {
  display_name: string;
  type: Exclude<DatabaseType, 'mongodb'>;
  version: string;
  cluster_id: string;
  resource_type_id: string;
  db_name: string;
  db_password: string;
  db_user?: string;
  project_id?: string | null;
  extensions?: { enable_vector?: boolean; enable_postgis?: boolean; enable_cron?: boolean };
}

/** User names a real server keeps for itself or for Slipway. */
const RESERVED_USERS = new Set(['root', 'postgres', 'mysql', 'mariadb.sys', 'public', 'slipway-admin']);
/** The longest user name each engine takes (PostgreSQL truncates longer ones, MySQL refuses them). */
const MAX_USER: Partial<Record<DatabaseType, number>> = { postgresql: 63, mysql: 32, mariadb: 80 };

/**
 * A database on a real SQL server: the user name must be one the server takes, and not another
 * database's (users are per server, across companies). Redis servers are each database's own.
 */
async function checkServerUser(ctx: CallContext, type: DatabaseType, runtime: RuntimeState, user: string) {
  if (runtime.family === 'redis') return;
  if (RESERVED_USERS.has(user.toLowerCase()) || /^pg_/i.test(user)) throw badRequest(`db_user "${user}" is reserved on the database server; choose another`);
  const max = MAX_USER[type]!;
  if (user.length > max) throw badRequest(`db_user must be at most ${max} characters on a ${type} server`);
  await lockServerUser(ctx.tx, runtime.family, user);
  const same = await listServerUsers(ctx.tx, user);
  if (same.some((r) => runtimeState(r)!.family === runtime.family))
    throw badRequest(`db_user "${user}" is already used by another database on this ${type} server; choose another`);
}

/** Starts creating a database; answers its representation (status creating). */
export async function createDatabase(ctx: CallContext, input: CreateInput) {
  const { tx, app, companyId } = ctx;
  if (!CLUSTER_BY_ID.has(input.cluster_id)) throw badRequest(`Unknown cluster_id ${input.cluster_id}; see GET /resources/clusters`);
  checkResourceType(input.resource_type_id);
  const versions = ENGINE_VERSIONS[input.type];
  if (!versions.includes(input.version)) throw badRequest(`Unsupported ${input.type} version "${input.version}" (supported: ${versions.join(', ')})`);
  if (input.extensions && input.type !== 'postgresql' && Object.values(input.extensions).some(Boolean))
    throw badRequest('extensions apply only to postgresql databases');
  const id = newId();
  const dbUser = input.db_user ?? (input.type === 'redis' || input.type === 'valkey' ? 'default' : input.db_name);
  // A real server: the database gets a name of its own there (db_name of the representation).
  const runtime = runtimes(app).initialState(input.type, id, input.db_name);
  if (runtime) await checkServerUser(ctx, input.type, runtime, input.db_user ?? runtime.database);
  const now = new Date().toISOString();
  const fields: Omit<DatabasesTable, 'name'> = {
    id,
    company_id: companyId,
    project_id: input.project_id ?? null,
    cluster_id: input.cluster_id,
    display_name: input.display_name,
    type: input.type,
    version: input.version,
    status: 'creating',
    is_suspended: 0,
    resource_type_id: input.resource_type_id,
    db_name: runtime?.database ?? input.db_name,
    db_user: runtime && !input.db_user && runtime.family !== 'redis' ? runtime.database : dbUser,
    password_enc: app.secrets.encrypt(input.db_password),
    extensions: JSON.stringify(input.extensions ?? {}),
    internal_port: runtime?.port ? String(runtime.port) : PORTS[input.type],
    external_enabled: 0,
    external_port: String(30000 + (randomBytes(2).readUInt16BE() % 2000)),
    backup_status: 'ready',
    data_version: 0,
    ip_type: 'allow',
    ip_enabled: 0,
    ip_list: '[]',
    operation: null,
    op_started_at: null,
    op_reads: 0,
    op_payload: null,
    runtime: runtime ? JSON.stringify(runtime) : null,
    created_at: now,
    updated_at: now,
  };
  // The name is unique in the company even under concurrent creates: the unique index decides.
  const row = await insertNamedDatabase(tx, companyId, input.display_name, (name): DatabasesTable => ({ ...fields, name }));
  if (row.project_id) await placeService(ctx, row.id, 'database', row.project_id);
  await startOperation(tx, row, 'database_create');
  await armDailyBackup(tx, app, row);
  await app.events.emit(tx, 'DATABASE_CREATE', companyId, row);
  return databaseView(await findDatabase(ctx, row.id));
}

/**
 * GET /databases/{id}. In `reads` progression the read may first advance the database's running
 * operation or backup (see noteRead), so the answer shows the state after it.
 */
export async function getDatabase(ctx: CallContext, id: string) {
  const { app } = ctx;
  const d = await findDatabase(ctx, id);
  const counted = await noteRead(app, d, (tx, databaseId, backupId) => stepBackup(tx, app, databaseId, backupId));
  return databaseDetailView(counted ? await findDatabase(ctx, id) : d);
}

/** Bumps the simulated data version: the database was written to. */
const written = (d: DatabasesTable) => ({ data_version: d.data_version + 1 });

export async function updateDatabase(ctx: CallContext, id: string, input: { display_name?: string; resource_type_id?: string; project_id?: string | null }) {
  const { tx, app, companyId } = ctx;
  const d = await lockDatabase(ctx, id);
  assertNotDeleting(d);
  if (input.resource_type_id !== undefined) checkResourceType(input.resource_type_id);
  const now = new Date().toISOString();
  const patch: Partial<DatabasesTable> = { ...written(d), updated_at: now };
  if (input.display_name !== undefined) patch.display_name = input.display_name;
  if (input.resource_type_id !== undefined) patch.resource_type_id = input.resource_type_id;
  if (input.project_id !== undefined && input.project_id !== d.project_id) {
    patch.project_id = input.project_id;
    await placeService(ctx, d.id, 'database', input.project_id);
  }
  await updateDatabaseColumns(tx, d.id, patch);
  await app.events.emit(tx, 'DATABASE_UPDATE', companyId, d);
  return databaseView(await findDatabase(ctx, id));
}

export async function deleteDatabase(ctx: CallContext, id: string) {
  const { tx } = ctx;
  const d = await lockDatabase(ctx, id);
  assertNotDeleting(d);
  // Whatever was under way on the database stops: its queued jobs are cancelled and the
  // conditional updates of a running one no longer match.
  await cancelJobs(tx, d.id);
  await failPendingBackups(tx, d.id);
  await startOperation(tx, d, 'database_delete');
  return { message: 'Database deletion started' };
}

const BUSY: Record<string, string> = {
  creating: 'is being created',
  deleting: 'is being deleted',
  updating: 'is being updated (restart in progress)',
  passwordChange: 'is changing its password',
  restoring: 'is being restored',
  updatingExternalConnection: 'is updating its external connection',
};

export async function setSuspended(ctx: CallContext, id: string, suspended: boolean) {
  const { tx, app, companyId } = ctx;
  const d = await lockDatabase(ctx, id);
  if (suspended) {
    if (BUSY[d.status]) throw badRequest(`The database cannot be suspended while it ${BUSY[d.status]}`);
    if (d.backup_status !== 'ready') throw badRequest('The database cannot be suspended while a backup is in progress');
  } else assertNotDeleting(d);
  if (bool(d.is_suspended) === suspended) return { message: suspended ? 'Database is already suspended' : 'Database is already active' };
  await updateDatabaseColumns(tx, d.id, { is_suspended: suspended ? 1 : 0, updated_at: new Date().toISOString() });
  if (d.runtime) await syncServer(tx, d.id);
  await app.events.emit(tx, 'DATABASE_UPDATE', companyId, d);
  return { message: suspended ? 'Database suspended' : 'Database activated' };
}

/** States from which restart and password reset may start (the contract's restart rule). */
const RESTARTABLE = new Set(['ready', 'error', 'passwordChangeFailed', 'restoringFailed']);

function assertIdle(d: DatabasesTable, what: string) {
  if (d.is_suspended) throw badRequest(`The database is suspended; activate it before ${what}`);
  if (!RESTARTABLE.has(d.status))
    throw badRequest(
      `The database ${BUSY[d.status] ?? `is ${d.status}`}; ${what} is allowed only when its status is ready, error, passwordChangeFailed or restoringFailed`,
    );
  if (d.backup_status !== 'ready') throw badRequest(`A backup of the database is in progress; ${what} is allowed once it finishes`);
}

export async function restartDatabase(ctx: CallContext, id: string) {
  const { tx } = ctx;
  const d = await lockDatabase(ctx, id);
  assertIdle(d, 'restarting it');
  await startOperation(tx, d, 'restart');
  return { message: 'Database restart started' };
}

export async function resetPassword(ctx: CallContext, id: string, password: string) {
  const { tx, app } = ctx;
  const d = await lockDatabase(ctx, id);
  assertIdle(d, 'changing its password');
  await startOperation(tx, d, 'password_change', { password_enc: app.secrets.encrypt(password) });
  return { message: 'Database password change started' };
}

export async function toggleExternalConnection(ctx: CallContext, id: string) {
  const { tx, app, companyId } = ctx;
  const d = await lockDatabase(ctx, id);
  assertNotDeleting(d);
  if (d.status === 'creating') throw badRequest('The database is being created; toggle its external connection once it is ready');
  const enabled = d.external_enabled ? 0 : 1;
  await updateDatabaseColumns(tx, d.id, { external_enabled: enabled, updated_at: new Date().toISOString() });
  if (d.runtime) await syncServer(tx, d.id);
  await app.events.emit(tx, 'DATABASE_UPDATE', companyId, d);
  return { message: enabled ? 'External connection enabled' : 'External connection disabled' };
}

// --- IP restriction ---------------------------------------------------------------------------

export async function getIpRestriction(ctx: CallContext, id: string) {
  return ipRestrictionView(await findDatabase(ctx, id));
}

export async function updateIpRestriction(ctx: CallContext, id: string, input: { type: 'allow' | 'deny'; is_enabled: boolean; ip_list: string[] }) {
  const { tx, app, companyId } = ctx;
  const d = await lockDatabase(ctx, id);
  assertNotDeleting(d);
  const list = ipList(input.ip_list);
  await updateDatabaseColumns(tx, d.id, {
    ip_type: input.type,
    ip_enabled: input.is_enabled ? 1 : 0,
    ip_list: JSON.stringify(list),
    updated_at: new Date().toISOString(),
  });
  if (d.runtime) await syncServer(tx, d.id);
  await app.events.emit(tx, 'DATABASE_UPDATE', companyId, d);
  return ipRestrictionView(await findDatabase(ctx, id));
}

// --- Internal connections ---------------------------------------------------------------------

interface Endpoint {
  id: string;
  name: string | null;
  display_name: string | null;
  cluster_id: string | null;
}

async function endpoint(ctx: CallContext, type: 'app' | 'database', id: string): Promise<Endpoint | undefined> {
  const { tx, app, companyId } = ctx;
  if (type === 'database') return findDatabaseEndpoint(tx, companyId, id);
  // Applications are another module's: asked through the service registry. Its summary tells the
  // region as `cluster_id` once the registry carries it; unknown, it matches no database's region.
  const s: ServiceSummary | undefined = await app.services.get('app')?.find(ctx, id);
  return s && { id: s.id, name: s.name, display_name: s.display_name, cluster_id: s.cluster_id ?? null };
}

export async function listConnections(ctx: CallContext, id: string) {
  const { tx } = ctx;
  const d = await findDatabase(ctx, id);
  const rows = await listConnectionRows(tx, d.id);
  const out = [];
  for (const r of rows) {
    const t = await endpoint(ctx, r.target_type, r.target_id);
    out.push({
      id: r.id,
      source_id: d.id,
      source_type: 'dbResource' as const,
      source_name: d.name,
      source_display_name: d.display_name,
      target_id: r.target_id,
      target_type: r.target_type === 'app' ? ('appResource' as const) : ('dbResource' as const),
      target_name: t?.name ?? null,
      target_display_name: t?.display_name ?? null,
    });
  }
  return out;
}

export async function createConnection(ctx: CallContext, id: string, input: { target_id: string; target_type: 'app' | 'database' }) {
  const { tx, companyId } = ctx;
  const d = await lockDatabase(ctx, id);
  assertNotDeleting(d);
  if (input.target_type === 'database' && input.target_id === d.id) throw badRequest('A database cannot be connected to itself');
  const t = await endpoint(ctx, input.target_type, input.target_id);
  if (!t) throw badRequest(`Unknown ${input.target_type === 'app' ? 'application' : 'database'} ${input.target_id}`);
  if (t.cluster_id !== d.cluster_id) throw badRequest('Internal connections are only supported between services in the same cluster (region)');
  if (await hasConnectionTo(tx, d.id, input.target_id)) throw badRequest('This internal connection already exists');
  const row = {
    id: newId(),
    database_id: d.id,
    company_id: companyId,
    target_id: input.target_id,
    target_type: input.target_type,
    created_at: new Date().toISOString(),
  };
  await insertConnection(tx, row);
  return { id: row.id };
}

export async function deleteConnection(ctx: CallContext, id: string, connectionId: string) {
  const { tx } = ctx;
  const d = await lockDatabase(ctx, id);
  if (!(await deleteConnectionRow(tx, d.id, connectionId))) throw new ApiError(404, 'Internal connection not found');
  return { message: 'Internal connection deleted' };
}

// --- Metrics ----------------------------------------------------------------------------------

export async function metric(ctx: CallContext, id: string, name: DatabaseMetric, q: { from: string; to: string; interval_in_seconds: number }) {
  const { app } = ctx;
  const d = await findDatabase(ctx, id);
  const from = new Date(q.from);
  const to = new Date(q.to);
  if (from.getTime() > to.getTime()) {
    const message = '`from` must not be later than `to`';
    throw new ApiError(400, message, { issues: [{ path: 'query.from', message }] });
  }
  const rt = DATABASE_RESOURCE_TYPE_BY_ID.get(d.resource_type_id) ?? DATABASE_RESOURCE_TYPES[0]!;
  const cores = rt.cpu_limit / 1000;
  const memory = rt.memory_limit * 1024 * 1024;
  const storage = rt.storage_limit * 1024 * 1024;
  // A real server: usage as it reads now (no history is kept); CPU and, on shared SQL servers,
  // memory cannot be told per database and read 0.
  const real = d.runtime ? await serverUsage(app, d) : null;
  const used = real ? real.storage : usedStorage(d, storage);
  const shape = {
    'cpu-usage': d.runtime ? { base: 0, spread: 0 } : { base: 0.02 * cores, spread: 0.3 * cores },
    'cpu-limit': { base: cores, spread: 0 },
    'memory-usage': d.runtime ? { base: real?.memory ?? 0, spread: 0 } : { base: 0.25 * memory, spread: 0.3 * memory },
    'memory-limit': { base: memory, spread: 0 },
    'storage-usage': d.runtime ? { base: used, spread: 0 } : { base: used * 0.98, spread: used * 0.02 },
    'storage-limit': { base: storage, spread: 0 },
  }[name];
  // A point stands for the interval it starts: the one the database was created in counts.
  const since = Date.parse(d.created_at);
  const now = Date.now();
  const live = !d.is_suspended && d.status !== 'creating';
  return app.simulated.series(d.id, name, from, to, q.interval_in_seconds, {
    ...shape,
    running: (t) => live && t.getTime() >= since - q.interval_in_seconds * 1000 && t.getTime() <= now,
  });
}

/** Simulated bytes in use: a small base that grows with the data version. */
function usedStorage(d: DatabasesTable, limit: number) {
  return Math.min(limit, 16 * 1024 * 1024 + d.data_version * 1024 * 1024);
}

export async function storageValue(ctx: CallContext, id: string, which: 'all' | 'used') {
  const d = await findDatabase(ctx, id);
  const rt = DATABASE_RESOURCE_TYPE_BY_ID.get(d.resource_type_id) ?? DATABASE_RESOURCE_TYPES[0]!;
  const storage = rt.storage_limit * 1024 * 1024;
  if (which === 'all') return { value: storage };
  if (d.runtime) return { value: (await serverUsage(ctx.app, d))?.storage ?? 0 };
  return { value: usedStorage(d, storage) };
}

/** The service registry's view of a database (projects list and check services through it). */
export function databaseSummaries({ tx, companyId }: CallContext, ids: readonly string[]): Promise<ServiceSummary[]> {
  return listDatabaseSummaries(tx, companyId, ids);
}
