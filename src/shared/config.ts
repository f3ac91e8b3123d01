// Server configuration: command-line flags override environment variables, which override defaults.
import { resolve } from 'node:path';
import { parseProgression, type FaultRule, type Progression } from './runtime/simulation.js';

export interface RateLimitConfig {
  service_creation: number;
  service_mutation: number;
  deployment: number;
  general_write: number;
  logs: number;
  read: number;
  unauthenticated: number;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  /** SQLite group commit (on by default; SLIPWAY_SQLITE_GROUP_COMMIT=0 turns it off; see shared/db/group-commit.ts). */
  sqliteGroupCommit: boolean;
  logLevel: string;
  production: boolean;
  trustProxy: boolean;
  tls?: { mode: 'files'; cert: string; key: string } | { mode: 'self-signed' };
  operatorToken?: string;
  bootstrapToken?: string;
  secretKey?: string;
  brandPrefix: string;
  rateLimits: RateLimitConfig;
  /**
   * Where rate-limit counters live (SLIPWAY_RATE_LIMIT_STORE): `memory` (one process), `redis`
   * (REDIS_URL, shared), `database` (the database, shared). Default: redis when REDIS_URL is set,
   * else database on PostgreSQL, else memory.
   */
  rateLimitStore: 'memory' | 'redis' | 'database';
  /** Redis for shared rate-limit counters (REDIS_URL). */
  redisUrl?: string;
  /** Prefix of this installation's Redis keys (SLIPWAY_REDIS_PREFIX, default `slipway:`). */
  redisPrefix: string;
  bodyLimit: number;
  /** Limits and timeouts of the HTTP server (docs/api-behaviour.md "Limits and timeouts"). */
  http: HttpLimits;
  publicUrl?: string;
  /** The web dashboard's built files (default: web/dist of this package). */
  dashboardDir?: string;
  jobs: { concurrency: number; concurrencyUnderLoad: number | undefined; ioConcurrency: number; leaseMs: number; pollMs: number; retryBaseMs: number };
  /**
   * Webhook delivery settings (read here because tests pass their environment to loadConfig,
   * not to process.env). Parsed by `webhookSettings` in src/modules/webhooks/delivery.ts.
   */
  webhooks: { env: Record<string, string | undefined> };
  /** Domain settings (`SLIPWAY_DOMAINS_*`), parsed by `domainSettings` in src/modules/domains/settings.ts. */
  domains: { env: Record<string, string | undefined> };
  /** Object storage settings (`SLIPWAY_OBJECT_STORAGE_*`), parsed by src/modules/object-storage/settings.ts. */
  objectStorage: { env: Record<string, string | undefined> };
  /** Real database engines (`SLIPWAY_DB_*`), parsed by `runtimeSettings` in src/modules/databases/runtime/settings.ts. */
  databases: { env: Record<string, string | undefined> };
  /** Metrics, traces and the request journal (`SLIPWAY_METRICS*`, `SLIPWAY_JOURNAL*`, `SLIPWAY_OTEL_*`, `OTEL_*`), parsed by src/shared/observability/settings.ts. */
  observability: { env: Record<string, string | undefined> };
  simulation: { progression: Record<string, Progression>; faults: Omit<FaultRule, 'id' | 'created_at'>[] };
  /**
   * How applications run: `simulated` (default), `local` (built from git and run as supervised
   * processes), `container` (built into images and run as containers of the engine at
   * DOCKER_HOST) or `swarm` (the same images run as services of the Docker Swarm whose manager is
   * at SLIPWAY_SWARM_DOCKER_HOST or DOCKER_HOST); docs/runtimes.md "Real applications" and
   * "Containers", docs/scaling.md.
   */
  runtime: 'simulated' | 'local' | 'container' | 'swarm';
  /**
   * Whether this server hosts for real (`local`, `container` or `swarm`): static sites, the edge, and the
   * rest of what is not an application's process run on this machine the same for both.
   */
  realRuntime: boolean;
  /** Settings of the real runtimes (`SLIPWAY_EDGE_*`, `SLIPWAY_BASE_DOMAIN`, `SLIPWAY_APPS_*`, `SLIPWAY_SITES_*`, `SLIPWAY_CONTAINER_*`, `SLIPWAY_SWARM_*`, `DOCKER_HOST`) and of git polling (`SLIPWAY_GIT_*`), parsed by the runtimes' settings.ts files, src/shared/edge/settings.ts and git-hooks/poll.ts. */
  apps: { env: Record<string, string | undefined> };
  /** Length of a "day" in preview apps' stale_app_days (shortened in tests). */
  previewDayMs: number;
  /** Process terminal sessions: closed after this long without input, and after this long in all. */
  terminal: { idleMs: number; maxMs: number };
}

export interface HttpLimits {
  /** Deepest nesting of arrays/objects in a JSON body (SLIPWAY_MAX_JSON_DEPTH). */
  maxJsonDepth: number;
  /** Longest string or property name in a JSON body, in characters (SLIPWAY_MAX_STRING_LENGTH). */
  maxStringLength: number;
  /** Longest path parameter, in characters (SLIPWAY_MAX_PARAM_LENGTH); longer is 400. */
  maxParamLength: number;
  /** Whole request (headers and body) must arrive within this, or 408 and close (SLIPWAY_REQUEST_TIMEOUT_MS). */
  requestTimeoutMs: number;
  /** Headers must arrive within this, or 408 and close (SLIPWAY_HEADERS_TIMEOUT_MS; at most requestTimeoutMs). */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this (SLIPWAY_KEEP_ALIVE_TIMEOUT_MS). */
  keepAliveTimeoutMs: number;
  /** A socket with no traffic at all for this long is destroyed (SLIPWAY_CONNECTION_TIMEOUT_MS; 0: never). */
  connectionTimeoutMs: number;
  /** Open connections from one client address; more are closed at once (SLIPWAY_MAX_CONNECTIONS_PER_IP; 0: no cap). */
  maxConnectionsPerIp: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  maxJsonDepth: 64,
  maxStringLength: 64 * 1024,
  maxParamLength: 100,
  requestTimeoutMs: 20_000,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 72_000,
  connectionTimeoutMs: 60_000,
  maxConnectionsPerIp: 256,
};

/**
 * An integer setting of the operator's environment (`d` when unset, which may be undefined: a
 * default decided elsewhere), checked at start: anything but digits, or a value below `min`, stops
 * the server with a message naming the variable.
 */
export function intSetting<D extends number | undefined>(env: Record<string, string | undefined>, name: string, d: D, min = 1): number | D {
  const v = env[name];
  if (v === undefined || v === '') return d;
  if (!/^\d+$/.test(v) || Number(v) < min) throw new Error(`${name} must be ${min === 1 ? 'a positive integer' : `an integer >= ${min}`} (got "${v}")`);
  return Number(v);
}

function httpLimits(env: NodeJS.ProcessEnv, trustProxy: boolean): HttpLimits {
  const int = (name: string, d: number, min = 0) => intSetting(env, name, d, min);
  const requestTimeoutMs = int('SLIPWAY_REQUEST_TIMEOUT_MS', DEFAULT_HTTP_LIMITS.requestTimeoutMs, 1);
  return {
    maxJsonDepth: int('SLIPWAY_MAX_JSON_DEPTH', DEFAULT_HTTP_LIMITS.maxJsonDepth, 1),
    maxStringLength: int('SLIPWAY_MAX_STRING_LENGTH', DEFAULT_HTTP_LIMITS.maxStringLength, 1),
    maxParamLength: int('SLIPWAY_MAX_PARAM_LENGTH', DEFAULT_HTTP_LIMITS.maxParamLength, 36),
    requestTimeoutMs,
    headersTimeoutMs: Math.min(requestTimeoutMs, int('SLIPWAY_HEADERS_TIMEOUT_MS', DEFAULT_HTTP_LIMITS.headersTimeoutMs, 1)),
    keepAliveTimeoutMs: int('SLIPWAY_KEEP_ALIVE_TIMEOUT_MS', DEFAULT_HTTP_LIMITS.keepAliveTimeoutMs, 1),
    connectionTimeoutMs: int('SLIPWAY_CONNECTION_TIMEOUT_MS', DEFAULT_HTTP_LIMITS.connectionTimeoutMs),
    // Behind a trusted proxy every connection comes from the proxy: no cap unless one is set.
    maxConnectionsPerIp: int('SLIPWAY_MAX_CONNECTIONS_PER_IP', trustProxy ? 0 : DEFAULT_HTTP_LIMITS.maxConnectionsPerIp),
  };
}

export const DEFAULT_RATE_LIMITS: RateLimitConfig = {
  service_creation: 20,
  service_mutation: 10,
  deployment: 10,
  general_write: 30,
  logs: 30,
  read: 400,
  unauthenticated: 400,
};

const TIER_ENV: Record<keyof RateLimitConfig, string> = {
  service_creation: 'SLIPWAY_RATE_SERVICE_CREATION',
  service_mutation: 'SLIPWAY_RATE_SERVICE_MUTATION',
  deployment: 'SLIPWAY_RATE_DEPLOYMENT',
  general_write: 'SLIPWAY_RATE_GENERAL_WRITE',
  logs: 'SLIPWAY_RATE_LOGS',
  read: 'SLIPWAY_RATE_READ',
  unauthenticated: 'SLIPWAY_RATE_UNAUTHENTICATED',
};

export const RATE_ENV_NAMES = TIER_ENV;

function bool(v: string | undefined): boolean {
  return v !== undefined && ['1', 'true', 'yes', 'on'].includes(v.toLowerCase());
}

export type Flags = Record<string, string | boolean | undefined>;

export function loadConfig(flags: Flags = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const str = (flag: string, envName: string): string | undefined => {
    const f = flags[flag];
    if (typeof f === 'string') return f;
    return env[envName] || undefined;
  };
  const rateLimits = { ...DEFAULT_RATE_LIMITS };
  for (const [tier, name] of Object.entries(TIER_ENV) as [keyof RateLimitConfig, string][]) {
    const v = env[name];
    if (v && /^\d+$/.test(v)) rateLimits[tier] = Number(v);
  }
  const tlsFlag = str('tls', 'SLIPWAY_TLS');
  const cert = str('tls-cert', 'SLIPWAY_TLS_CERT');
  const key = str('tls-key', 'SLIPWAY_TLS_KEY');
  let tls: Config['tls'];
  if (cert || key) {
    if (!cert || !key) throw new Error('--tls-cert and --tls-key must be given together');
    tls = { mode: 'files', cert, key };
  } else if (tlsFlag === 'self-signed') tls = { mode: 'self-signed' };
  else if (tlsFlag) throw new Error(`unknown --tls mode "${tlsFlag}" (expected "self-signed")`);

  const trustProxy = flags['trust-proxy'] === true || bool(env.SLIPWAY_TRUST_PROXY);
  const port = Number(str('port', 'PORT') ?? 8080);
  const runtime = str('runtime', 'SLIPWAY_RUNTIME') ?? 'simulated';
  if (runtime !== 'simulated' && runtime !== 'local' && runtime !== 'container' && runtime !== 'swarm')
    throw new Error(`unknown runtime "${runtime}" (expected "simulated", "local", "container" or "swarm")`);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid port "${str('port', 'PORT')}"`);
  const databaseUrl = str('database-url', 'DATABASE_URL');
  const redisUrl = env.REDIS_URL || undefined;
  const rateLimitStore = env.SLIPWAY_RATE_LIMIT_STORE || (redisUrl ? 'redis' : databaseUrl ? 'database' : 'memory');
  if (rateLimitStore !== 'memory' && rateLimitStore !== 'redis' && rateLimitStore !== 'database')
    throw new Error(`unknown SLIPWAY_RATE_LIMIT_STORE "${rateLimitStore}" (expected memory, redis or database)`);
  if (rateLimitStore === 'redis' && !redisUrl) throw new Error('SLIPWAY_RATE_LIMIT_STORE=redis needs REDIS_URL');
  const groupCommit = env.SLIPWAY_SQLITE_GROUP_COMMIT;
  if (groupCommit && groupCommit !== '0' && groupCommit !== '1') throw new Error(`SLIPWAY_SQLITE_GROUP_COMMIT must be 0 or 1 (got "${groupCommit}")`);
  return {
    port,
    host: str('host', 'HOST') ?? '127.0.0.1',
    dataDir: resolve(str('data-dir', 'DATA_DIR') ?? './data'),
    databaseUrl,
    sqliteGroupCommit: groupCommit !== '0',
    logLevel: str('log-level', 'LOG_LEVEL') ?? 'info',
    production: flags.production === true || env.NODE_ENV === 'production',
    trustProxy,
    tls,
    operatorToken: str('operator-token', 'SLIPWAY_OPERATOR_TOKEN'),
    bootstrapToken: env.SLIPWAY_BOOTSTRAP_TOKEN || undefined,
    secretKey: env.SLIPWAY_SECRET_KEY || undefined,
    brandPrefix: (env.SLIPWAY_BRAND_PREFIX || 'svl').toLowerCase(),
    rateLimits,
    rateLimitStore,
    redisUrl,
    redisPrefix: env.SLIPWAY_REDIS_PREFIX || 'slipway:',
    bodyLimit: Number(env.SLIPWAY_BODY_LIMIT || 1024 * 1024),
    http: httpLimits(env, trustProxy),
    publicUrl: str('public-url', 'SLIPWAY_PUBLIC_URL'),
    dashboardDir: env.SLIPWAY_DASHBOARD_DIR || undefined,
    jobs: {
      concurrency: intSetting(env, 'SLIPWAY_JOB_CONCURRENCY', 8),
      // Unset: the job engine's default, which depends on the database (src/shared/job-engine.ts).
      concurrencyUnderLoad: intSetting(env, 'SLIPWAY_JOB_CONCURRENCY_UNDER_LOAD', undefined),
      ioConcurrency: intSetting(env, 'SLIPWAY_JOB_IO_CONCURRENCY', 64),
      leaseMs: intSetting(env, 'SLIPWAY_JOB_LEASE_MS', 15_000),
      pollMs: intSetting(env, 'SLIPWAY_JOB_POLL_MS', 100),
      retryBaseMs: intSetting(env, 'SLIPWAY_JOB_RETRY_BASE_MS', 1000),
    },
    webhooks: { env: pickEnv(env, 'SLIPWAY_WEBHOOK_') },
    domains: { env: pickEnv(env, 'SLIPWAY_DOMAINS_') },
    objectStorage: { env: pickEnv(env, 'SLIPWAY_OBJECT_STORAGE_') },
    databases: { env: pickEnv(env, 'SLIPWAY_DB_') },
    observability: {
      env: { ...pickEnv(env, 'SLIPWAY_METRICS'), ...pickEnv(env, 'SLIPWAY_JOURNAL'), ...pickEnv(env, 'SLIPWAY_OTEL_'), ...pickEnv(env, 'OTEL_') },
    },
    simulation: {
      progression: parseProgression(str('sim-progression', 'SLIPWAY_SIM_PROGRESSION')),
      faults: parseFaults(env.SLIPWAY_SIM_FAULTS),
    },
    runtime,
    realRuntime: runtime !== 'simulated',
    apps: {
      env: {
        SLIPWAY_EDGE: env.SLIPWAY_EDGE,
        ...pickEnv(env, 'SLIPWAY_EDGE_'),
        ...pickEnv(env, 'SLIPWAY_APPS_'),
        ...pickEnv(env, 'SLIPWAY_SITES_'),
        ...pickEnv(env, 'SLIPWAY_CONTAINER_'),
        ...pickEnv(env, 'SLIPWAY_SWARM_'),
        ...pickEnv(env, 'SLIPWAY_GIT_'),
        DOCKER_HOST: env.DOCKER_HOST,
        DOCKER_TLS_VERIFY: env.DOCKER_TLS_VERIFY,
        DOCKER_CERT_PATH: env.DOCKER_CERT_PATH,
        SLIPWAY_BASE_DOMAIN: env.SLIPWAY_BASE_DOMAIN,
      },
    },
    previewDayMs: intSetting(env, 'SLIPWAY_PREVIEW_DAY_MS', 86_400_000),
    terminal: {
      idleMs: intSetting(env, 'SLIPWAY_TERMINAL_IDLE_MS', 10 * 60_000),
      maxMs: intSetting(env, 'SLIPWAY_TERMINAL_MAX_MS', 60 * 60_000),
    },
  };
}

/** A positive integer setting, or its default. */

/** The variables of `env` whose names start with `prefix` (a module parses its own settings). */
function pickEnv(env: NodeJS.ProcessEnv, prefix: string): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith(prefix)));
}

function parseFaults(json: string | undefined): Omit<FaultRule, 'id' | 'created_at'>[] {
  if (!json) return [];
  let list: unknown;
  try {
    list = JSON.parse(json);
  } catch {
    throw new Error('SLIPWAY_SIM_FAULTS must be a JSON array of fault rules');
  }
  if (!Array.isArray(list)) throw new Error('SLIPWAY_SIM_FAULTS must be a JSON array of fault rules');
  return list.map((f: Record<string, unknown>) => ({
    operation: String(f.operation ?? '*'),
    target_id: (f.target_id as string) ?? null,
    phase: (f.phase as string) ?? null,
    probability: typeof f.probability === 'number' ? f.probability : 1,
    remaining: typeof f.remaining === 'number' ? f.remaining : null,
    message: String(f.message ?? `Simulated failure (${String(f.operation ?? '*')})`),
  }));
}
