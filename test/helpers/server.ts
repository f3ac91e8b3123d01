// Test harness: starts a real Slipway server (in this process, on a random port) against SQLite
// in a temporary directory or against a fresh PostgreSQL database, and gives an HTTP client whose
// every response is validated against the OpenAPI document that server publishes.
//
// A suite gets its server with `useServer` (started before its tests, closed after them):
//
//   for (const kind of DB_KINDS) {
//     describe(`things [${kind}]`, { skip: await skipUnless(kind) }, () => {
//       const s = useServer({ db: kind, rateLimits: GENEROUS });
//       it('...', async () => expectStatus(await s.get('/things'), 200));
//     });
//   }
//
// `startServer` starts one directly (a second server inside one test; close it in `finally`).
import { before, after } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { loadConfig, DEFAULT_RATE_LIMITS, type RateLimitConfig } from '../../src/shared/config.js';
import { createServer, type Server } from '../../src/server.js';
import { openDatabase, type Database } from '../../src/shared/db/index.js';
import type { GroupCommitOptions } from '../../src/shared/db/group-commit.js';
import { ContractChecker } from './contract.js';

export type DbKind = 'sqlite' | 'postgres';

export const PG_ADMIN_URL = process.env.SLIPWAY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REQUIRE_PG = process.env.SLIPWAY_REQUIRE_POSTGRES === '1';

let pgAvailable: Promise<boolean> | undefined;
export function postgresAvailable(): Promise<boolean> {
  pgAvailable ??= (async () => {
    // A refused connection fails at once; the timeout only bounds a hung one, and is generous
    // because a busy machine (test files run concurrently) can be slow to answer.
    const c = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 15_000 });
    try {
      await c.connect();
      await c.query('select 1');
      return true;
    } catch (e) {
      if (REQUIRE_PG)
        throw new Error(`PostgreSQL is required (SLIPWAY_REQUIRE_POSTGRES=1) but unreachable at ${PG_ADMIN_URL}: ${(e as Error).message}`, { cause: e });
      console.warn(`# PostgreSQL unreachable at ${PG_ADMIN_URL}: PostgreSQL suites are skipped (set SLIPWAY_REQUIRE_POSTGRES=1 to make them mandatory)`);
      return false;
    } finally {
      await c.end().catch(() => {});
    }
  })();
  return pgAvailable;
}

/** Every rate tier generous, so suites are not throttled by their own polling. */
export const GENEROUS: Partial<RateLimitConfig> = {
  general_write: 100_000,
  service_creation: 100_000,
  service_mutation: 100_000,
  deployment: 100_000,
  logs: 100_000,
  read: 100_000,
};

/** The database kinds every HTTP suite runs against. */
export const DB_KINDS: DbKind[] = ['sqlite', 'postgres'];

/** `{ skip }` option for node:test: skips PostgreSQL suites only when PostgreSQL is not required and not reachable. */
export async function skipUnless(kind: DbKind): Promise<boolean | string> {
  if (kind === 'sqlite') return false;
  return (await postgresAvailable()) ? false : 'PostgreSQL not reachable (set SLIPWAY_REQUIRE_POSTGRES=1 to fail instead)';
}

/** The Redis of the rate-limit counter tests (REDIS_URL, default the local one). */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const REQUIRE_REDIS = process.env.SLIPWAY_REQUIRE_REDIS === '1';

/** `skip` option for suites that need Redis: a reason when it does not answer PING (unless SLIPWAY_REQUIRE_REDIS=1). */
export async function redisSkip(): Promise<false | string> {
  const u = new URL(REDIS_URL);
  const answered = await new Promise<boolean>((resolve) => {
    const socket = connect({ host: u.hostname, port: Number(u.port || 6379) }, () => socket.write('PING\r\n'));
    socket.setTimeout(5000, () => (socket.destroy(), resolve(false)));
    socket.once('data', (d) => (socket.destroy(), resolve(d.toString().startsWith('+PONG'))));
    socket.once('error', () => resolve(false));
  });
  if (answered) return false;
  if (REQUIRE_REDIS) throw new Error(`Redis is required (SLIPWAY_REQUIRE_REDIS=1) but does not answer at ${REDIS_URL}`);
  return `Redis not reachable at ${REDIS_URL} (set SLIPWAY_REQUIRE_REDIS=1 to fail instead)`;
}

/**
 * A test database's name is the run's prefix (test/run.mjs gives each run its own, and drops the
 * run's leftovers by it), then the test file's name (`authentication` for
 * test/foundation/authentication.test.ts), so a database left behind names the file that made it.
 */
const dbPrefix = process.env.SLIPWAY_TEST_DB_PREFIX ?? 'slipway_test_';
const fileTag = (process.argv[1] ?? '')
  .replace(/^.*[\\/]/, '')
  .replace(/\.test\.[mc]?[jt]s$/, '')
  .toLowerCase()
  .replace(/[^a-z0-9]+/g, '_')
  .slice(0, 24);

export async function createPgDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${dbPrefix}${fileTag}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * A database of `kind` of its own, opened without migrations: a fresh PostgreSQL database, or a
 * SQLite file in a fresh directory (`prefix` names it). `cleanup` drops or removes it (close first).
 */
export async function openScratchDatabase(
  kind: 'sqlite' | 'postgres',
  prefix: string,
  opts: { groupCommit?: boolean | GroupCommitOptions } = {},
): Promise<{ database: Database; cleanup(): Promise<void> }> {
  if (kind === 'postgres') {
    const made = await createPgDatabase();
    return { database: openDatabase({ databaseUrl: made.url, dataDir: tmpdir() }), cleanup: made.drop };
  }
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { database: openDatabase({ dataDir: dir, groupCommit: opts.groupCommit }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
}

export interface TestServerOptions {
  db?: DbKind;
  rateLimits?: Partial<RateLimitConfig>;
  env?: Record<string, string>;
  flags?: Record<string, string | boolean>;
  /** Reuse an existing database URL (several servers on one PostgreSQL). */
  databaseUrl?: string;
  /** Fastify/pino logger options (e.g. a stream to capture the log). */
  logger?: { level: string; stream?: NodeJS.WritableStream };
}

export interface Response<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Raw body text (sent as-is); overrides `body`. */
  raw?: string;
  token?: string | null;
  headers?: Record<string, string>;
}

export class TestServer {
  readonly checker: ContractChecker;
  constructor(
    readonly server: Server,
    readonly baseUrl: string,
    readonly token: string,
    readonly companyId: string,
    private cleanup: () => Promise<void>,
  ) {
    this.checker = new ContractChecker();
  }

  get app() {
    return this.server.app;
  }

  /** Sends a request to `/v3<path>` (or an absolute path outside /v3 when it starts with `/_` or `/healthz`). */
  async request<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<Response<T>> {
    const url = path.startsWith('/v3') || path.startsWith('/_') || path.startsWith('/healthz') || path.startsWith('/readyz') ? path : `/v3${path}`;
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    const token = opts.token === undefined ? this.token : opts.token;
    if (token !== null && headers.authorization === undefined) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (opts.raw !== undefined) body = opts.raw;
    else if (opts.body !== undefined) body = JSON.stringify(opts.body);
    if (body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
    const res = await fetch(this.baseUrl + url, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = undefined;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    if (url.startsWith('/v3/') && url !== '/v3/openapi.json') await this.checker.check(this, method, url, res.status, parsed);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  get = <T = any>(path: string, opts?: RequestOptions) => this.request<T>('GET', path, opts);
  post = <T = any>(path: string, body?: unknown, opts?: RequestOptions) => this.request<T>('POST', path, { ...opts, body });
  patch = <T = any>(path: string, body?: unknown, opts?: RequestOptions) => this.request<T>('PATCH', path, { ...opts, body });
  put = <T = any>(path: string, body?: unknown, opts?: RequestOptions) => this.request<T>('PUT', path, { ...opts, body });
  delete = <T = any>(path: string, opts?: RequestOptions) => this.request<T>('DELETE', path, opts);

  /** Operator call to /_admin (the harness always sets an operator token). */
  admin = <T = any>(method: string, path: string, body?: unknown) =>
    this.request<T>(method, `/_admin${path}`, { body, token: null, headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });

  /** A new company with one key of `role`; returns its id and token. */
  async newCompany(role = 'Company Admin'): Promise<{ companyId: string; token: string }> {
    const r = await this.admin('POST', '/companies', { name: `company ${randomBytes(3).toString('hex')}`, admin_key_role: role });
    if (r.status !== 201) throw new Error(`admin create company: ${r.status} ${r.text}`);
    return { companyId: r.body.company.id, token: r.body.api_key.token };
  }

  /** A new key in this server's first company (or `companyId`). */
  async newKey(spec: {
    role?: string;
    capabilities?: { permission: string; id_resource?: string | null }[];
    companyId?: string;
    expired_at?: string;
  }): Promise<{ id: string; token: string }> {
    const r = await this.admin('POST', `/companies/${spec.companyId ?? this.companyId}/api-keys`, {
      name: 'test key',
      role: spec.role,
      capabilities: spec.capabilities,
      expired_at: spec.expired_at,
    });
    if (r.status !== 201) throw new Error(`admin create key: ${r.status} ${r.text}`);
    return { id: r.body.id, token: r.body.token };
  }

  private closed: Promise<void> | undefined;

  /** Stops the server and removes its data; a second call waits for the first (a test may stop a useServer server itself). */
  close() {
    return (this.closed ??= this.cleanup());
  }
}

/** The edge driver of this run, from the test's own environment (see startServer). */
export function edgeEnv(): Record<string, string> {
  const chosen = process.env.SLIPWAY_EDGE || (process.env.SLIPWAY_REQUIRE_NGINX === '1' ? 'nginx' : '');
  return chosen ? { SLIPWAY_EDGE: chosen } : {};
}

export const OPERATOR_TOKEN = 'test-operator-token-0123456789';

export async function startServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const kind = opts.db ?? 'sqlite';
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-test-'));
  let pgDb: { url: string; drop(): Promise<void> } | undefined;
  let databaseUrl = opts.databaseUrl;
  if (kind === 'postgres' && !databaseUrl) {
    pgDb = await createPgDatabase();
    databaseUrl = pgDb.url;
  }
  const token = `svl_${randomBytes(32).toString('hex')}`;
  const env: NodeJS.ProcessEnv = {
    SLIPWAY_BOOTSTRAP_TOKEN: token,
    SLIPWAY_OPERATOR_TOKEN: OPERATOR_TOKEN,
    SLIPWAY_SECRET_KEY: 'test-secret-key',
    // The edge's nginx stops with the test's server (in production it keeps serving); SLIPWAY_EDGE
    // picks the driver of a run (SLIPWAY_EDGE=node: the in-process edge), and SLIPWAY_REQUIRE_NGINX=1
    // makes a missing nginx fail the start instead of falling back to it.
    SLIPWAY_EDGE_STOP_ON_EXIT: '1',
    // Containers and swarm services stop with it too (in production they outlive a stop).
    SLIPWAY_APPS_STOP_ON_EXIT: '1',
    ...edgeEnv(),
    ...(opts.env ?? {}),
  };
  const config = loadConfig(
    {
      port: '0',
      'data-dir': dataDir,
      'log-level': process.env.SLIPWAY_TEST_LOG_LEVEL ?? 'silent',
      ...(databaseUrl ? { 'database-url': databaseUrl } : {}),
      ...(opts.flags ?? {}),
    },
    env,
  );
  config.rateLimits = { ...DEFAULT_RATE_LIMITS, ...(opts.rateLimits ?? {}) };
  const server = await createServer(config, opts.logger ? { logger: opts.logger } : {});
  const baseUrl = await server.listen();
  const companyId =
    server.bootstrap.companyId ?? (await server.app.database.db.selectFrom('companies').select('id').orderBy('created_at').executeTakeFirstOrThrow()).id;
  return new TestServer(server, baseUrl, server.bootstrap.token ?? token, companyId, async () => {
    await server.close();
    await pgDb?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
}

/**
 * Registers `before`/`after` hooks in the enclosing `describe` that start a server (`opts`, or
 * `opts()` evaluated when the hook runs) and close it, and returns a handle usable as that
 * TestServer from hooks and tests registered after this call (hooks run in registration order,
 * so a later `before` can already use it, and a later `after` runs once it is closed). Touching
 * the handle before the server started throws. `beforeClose`: the suite's teardown that needs the
 * server still running (what it made deleted through the API), run if the server started.
 */
export function useServer(
  opts: TestServerOptions | (() => TestServerOptions) = {},
  teardown: { beforeClose?: (s: TestServer) => Promise<unknown> } = {},
): TestServer {
  let current: TestServer | undefined;
  before(async () => {
    current = await startServer(typeof opts === 'function' ? opts() : opts);
  });
  after(async () => {
    try {
      if (current) await teardown.beforeClose?.(current);
    } finally {
      const s = current;
      current = undefined;
      await s?.close();
    }
  });
  return new Proxy({} as TestServer, {
    get(_target, prop) {
      // Not a thenable; symbols (inspection) are answered even when stopped.
      if (prop === 'then' || (!current && typeof prop === 'symbol')) return undefined;
      if (!current) throw new Error(`the suite's server is not running (useServer handle used outside its suite's hooks and tests: .${String(prop)})`);
      const v = Reflect.get(current, prop, current);
      return typeof v === 'function' ? v.bind(current) : v;
    },
  });
}
