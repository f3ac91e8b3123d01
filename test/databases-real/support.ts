// Helpers of the real-engine suites: the servers they run against (a PostgreSQL instance of their
// own with password authentication, the machine's MariaDB, the redis-server binary), whether each
// is there (mandatory when SLIPWAY_REQUIRE_REAL_DATABASES=1, as CI sets), and API shortcuts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { call, startChild, type ChildServer } from '../helpers/process.js';
import type { TestServer } from '../helpers/server.js';
import { DATABASE_FINAL, untilStatus } from '../helpers/status.js';
import { expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import { DATABASE_RESOURCE_TYPES, DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { which } from '../../src/modules/databases/runtime/engine.js';
import { freePort } from '../../src/modules/applications/runtime/local/supervisor.js';

export const REQUIRE_REAL = process.env.SLIPWAY_REQUIRE_REAL_DATABASES === '1';
export const MYSQL_ADMIN_URL = process.env.SLIPWAY_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';
const PG_BIN = process.env.SLIPWAY_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** `{ skip }` for a suite whose server is missing: a reason, or a failure when the suites are mandatory. */
export function unavailable(what: string, why: string): string {
  if (REQUIRE_REAL) throw new Error(`${what} is required (SLIPWAY_REQUIRE_REAL_DATABASES=1) but unavailable: ${why}`);
  const reason = `${what} unavailable (${why}); set SLIPWAY_REQUIRE_REAL_DATABASES=1 to fail instead`;
  console.warn(`# ${reason}`);
  return reason;
}

export interface PgInstance {
  url: string;
  port: number;
  stop(): void;
}

/**
 * A PostgreSQL server of the suite's own with SCRAM password authentication (the machine's server
 * trusts every local connection, so it would accept any password). initdb refuses root: as root,
 * it runs as the `postgres` system user.
 */
export async function startPasswordPostgres(): Promise<PgInstance | string> {
  if (!existsSync(join(PG_BIN, 'initdb'))) return unavailable('PostgreSQL server binaries', `no initdb in ${PG_BIN} (SLIPWAY_TEST_PG_BIN)`);
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'slipway-pg-'));
  const adminPassword = randomBytes(12).toString('hex');
  writeFileSync(join(dir, 'pw'), adminPassword);
  if (asRoot) {
    chownSync(dir, uid('postgres'), 0);
    chownSync(join(dir, 'pw'), uid('postgres'), 0);
  }
  const as = (cmd: string, args: string[]) =>
    asRoot ? spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8' }) : spawnSync(cmd, args, { encoding: 'utf8' });
  const init = as(join(PG_BIN, 'initdb'), ['-D', join(dir, 'data'), '--auth=scram-sha-256', `--pwfile=${join(dir, 'pw')}`, '-U', 'postgres', '--no-sync']);
  if (init.status !== 0) return unavailable('a PostgreSQL instance with password authentication', `initdb: ${init.stderr.trim().split('\n').pop()}`);
  const port = await freePort();
  const start = as(join(PG_BIN, 'pg_ctl'), [
    '-D',
    join(dir, 'data'),
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
    '-l',
    join(dir, 'log'),
    '-w',
    'start',
  ]);
  if (start.status !== 0) return unavailable('a PostgreSQL instance with password authentication', `pg_ctl: ${start.stderr.trim()}`);
  return {
    url: `postgres://postgres:${adminPassword}@127.0.0.1:${port}/postgres`,
    port,
    stop() {
      as(join(PG_BIN, 'pg_ctl'), ['-D', join(dir, 'data'), '-m', 'immediate', 'stop']);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function uid(user: string): number {
  return Number(spawnSync('id', ['-u', user], { encoding: 'utf8' }).stdout.trim());
}

/** The machine's MariaDB/MySQL (root, empty password) when it answers. */
export async function mysqlAvailable(): Promise<true | string> {
  try {
    const c = await mysql.createConnection({ uri: MYSQL_ADMIN_URL, connectTimeout: 3000 });
    await c.end();
    return true;
  } catch (e) {
    return unavailable(`MariaDB/MySQL at ${MYSQL_ADMIN_URL}`, (e as Error).message);
  }
}

export function redisBin(): string {
  return which(process.env.SLIPWAY_TEST_REDIS_BIN ?? 'redis-server') ?? unavailable('redis-server', 'not on PATH');
}

export function body(type: string, version: string, o: { db_name?: string; db_user?: string; password?: string; extra?: Record<string, unknown> } = {}) {
  return {
    display_name: uniqueName('real', { random: true }),
    type,
    version,
    cluster_id: DEFAULT_CLUSTER.id,
    resource_type_id: DATABASE_RESOURCE_TYPES[0]!.id,
    db_name: o.db_name ?? 'appdata',
    db_password: o.password ?? 'Secret_pass1',
    ...(o.db_user ? { db_user: o.db_user } : {}),
    ...(o.extra ?? {}),
  };
}

export interface Created {
  id: string;
  db_name: string;
  internal_hostname: string;
  internal_port: string;
  status: string;
}

/**
 * Deletes databases through the API (an id, or `[token, id]` for another company's) and waits until
 * they are gone; what a suite made on a shared server goes this way. Failures are ignored (a teardown).
 */
export async function removeDatabases(s: TestServer, ids: (string | [token: string, id: string])[]): Promise<void> {
  const owned = ids.map((x) => (typeof x === 'string' ? { id: x } : { token: x[0], id: x[1] }));
  for (const { token, id } of owned) await s.delete(`/databases/${id}`, { token });
  for (const { token, id } of owned) await waitFor('cleanup', async () => (await s.get(`/databases/${id}`, { token })).status === 404, 60_000).catch(() => {});
}

export async function getDb(s: TestServer, id: string): Promise<Created & Record<string, unknown>> {
  return expectStatus(await s.get(`/databases/${id}`), 200);
}

export async function waitStatus(s: TestServer, id: string, ...want: string[]) {
  return untilStatus(`database ${id} to reach ${want.join('/')}`, () => getDb(s, id), { statuses: want, timeoutMs: 60_000, intervalMs: 50 });
}

/** Creates a database through the API and waits for its final status. */
export async function create(s: TestServer, b: ReturnType<typeof body>, final = 'ready') {
  const d = expectStatus(await s.post('/databases', b), 201);
  return waitStatus(s, d.id, final, ...['ready', 'error'].filter((x) => x !== final));
}

/** Takes an internal backup and returns its id once it is listed. */
export async function backup(s: TestServer, id: string): Promise<string> {
  const before = new Set((expectStatus(await s.get(`/databases/${id}/backups`), 200) as { id: string }[]).map((b) => b.id));
  expectStatus(await s.post(`/databases/${id}/backups`, { display_name: uniqueName('snap', { random: true }) }), 202);
  await waitFor(
    'the backup to finish',
    async () =>
      (await s.app.database.db.selectFrom('databases').select('backup_status').where('id', '=', id).executeTakeFirstOrThrow()).backup_status === 'ready',
    60_000,
  );
  const list = expectStatus(await s.get(`/databases/${id}/backups`), 200) as { id: string }[];
  const made = list.find((b) => !before.has(b.id));
  if (!made) throw new Error('the backup failed');
  return made.id;
}

/** Where the file store keeps a backup of the server under test. */
export const backupFile = (s: TestServer, databaseId: string, backupId: string) =>
  join(s.app.config.dataDir, 'database-backups', databaseId, encodeURIComponent(backupId));

// ---- Checks the SQL engines share (MariaDB, PostgreSQL) --------------------------------------------

/** How a client reaches a SQL database as its user. */
export interface SqlConn {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
}

/** The connection facts of a created database for its user. */
export const sqlConn = (d: Created, user: string, password: string): SqlConn => ({
  host: d.internal_hostname,
  port: Number(d.internal_port),
  database: d.db_name,
  user,
  password,
});

/** An open client session, as far as the shared checks use it. */
export interface Session {
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}

/**
 * Suspends the database: logins are refused (`login` answers something matching `refused`) and
 * the `open` session is closed; then activates it: logins (`'ok'`) are accepted again.
 */
export async function checkSuspension(s: TestServer, id: string, open: Session, login: () => Promise<string>, refused: RegExp): Promise<void> {
  expectStatus(await s.post(`/databases/${id}/suspend`), 200);
  await waitFor('logins to be refused', async () => refused.test(await login()), 20_000);
  // The sessions are closed right after the login is turned off.
  await waitFor(
    'the open session to be closed',
    () =>
      open.query('SELECT 1').then(
        () => false,
        () => true,
      ),
    20_000,
  );
  await open.end().catch(() => {});
  expectStatus(await s.post(`/databases/${id}/activate`), 200);
  await waitFor('logins to be accepted', async () => (await login()) === 'ok', 20_000);
}

/** A restart aborts the transaction `open` starts (`begin`) with an uncommitted row in `items`; the database is ready again. */
export async function checkRestartAborts(s: TestServer, id: string, open: Session, begin: string): Promise<void> {
  await open.query(begin);
  await open.query("INSERT INTO items VALUES ('uncommitted')");
  expectStatus(await s.post(`/databases/${id}/restart`), 200);
  await waitStatus(s, id, 'ready', 'error');
  assert.equal((await getDb(s, id)).status, 'ready');
  await assert.rejects(open.query('COMMIT'));
  await open.end().catch(() => {});
}

/**
 * Backs up, changes the data through `run` (deletes the row 'one' of `items`, adds 'three',
 * creates the table `later`) and restores the backup: the database is ready. Returns the backup id.
 */
export async function backupChangeRestore(s: TestServer, id: string, run: (sql: string) => Promise<unknown>): Promise<string> {
  const snapshot = await backup(s, id);
  assert.ok(existsSync(backupFile(s, id, snapshot)), 'the dump is stored under the data directory');
  await run("DELETE FROM items WHERE v = 'one'");
  await run("INSERT INTO items VALUES ('three')");
  await run('CREATE TABLE later (x int)');
  expectStatus(await s.post(`/databases/${id}/backups/${snapshot}/restore`), 202);
  await waitStatus(s, id, 'ready', 'restoringFailed');
  assert.equal((await getDb(s, id)).status, 'ready');
  return snapshot;
}

/** Restores a fresh backup whose file is replaced by `content`: the database ends in restoringFailed. */
export async function restoreBrokenDump(s: TestServer, id: string, content: string): Promise<void> {
  const broken = await backup(s, id);
  writeFileSync(backupFile(s, id, broken), content);
  expectStatus(await s.post(`/databases/${id}/backups/${broken}/restore`), 202);
  await waitStatus(s, id, 'restoringFailed', 'ready');
  assert.equal((await getDb(s, id)).status, 'restoringFailed');
}

// ---- Crash tests ----------------------------------------------------------------------------

/** A `slipway serve` child on a data directory of its own, SIGKILLed and started again at will. */
export function crashable(env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-real-crash-'));
  const token = `svl_${randomBytes(32).toString('hex')}`;
  const full = { ...env, DATA_DIR: dir, SLIPWAY_BOOTSTRAP_TOKEN: token, SLIPWAY_SECRET_KEY: 'real-crash-secret', SLIPWAY_SIM_PROGRESSION: '*=immediate' };
  const h = {
    dir,
    child: undefined as ChildServer | undefined,
    async api(method: string, path: string, expected: number, b?: unknown) {
      const r = await call(h.child!.baseUrl, method, path, token, b);
      assert.equal(r.status, expected, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
    async restart() {
      await h.child?.stop('SIGKILL');
      h.child = await startChild([], full, 120_000); // generous: the machine may be busy
    },
    waitFinal: (id: string) =>
      untilStatus(`database ${id} to reach a final status`, () => h.api('GET', `/databases/${id}`, 200), {
        statuses: DATABASE_FINAL,
        timeoutMs: 60_000,
        intervalMs: 50,
      }),
    async deleteAll() {
      const list = (await h.api('GET', '/databases?limit=100', 200)) as { data: { id: string }[] };
      for (const d of list.data) await h.api('DELETE', `/databases/${d.id}`, 200);
      for (const d of list.data)
        await waitFor(`deletion of ${d.id}`, async () => (await call(h.child!.baseUrl, 'GET', `/databases/${d.id}`, token)).status === 404, 60_000);
    },
  };
  return h;
}

/** Runs `fn` on one connection to a Redis server (no retries; connection errors surface from `connect`), then disconnects. */
export async function withRedis<T>(c: { host: string; port: number; username?: string; password: string }, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis({ ...c, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}
