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
  logLevel: string;
  production: boolean;
  trustProxy: boolean;
  tls?: { mode: 'files'; cert: string; key: string } | { mode: 'self-signed' };
  operatorToken?: string;
  bootstrapToken?: string;
  secretKey?: string;
  brandPrefix: string;
  rateLimits: RateLimitConfig;
  bodyLimit: number;
  publicUrl?: string;
  jobs: { concurrency: number; leaseMs: number; pollMs: number; retryBaseMs: number };
  /**
   * Webhook delivery settings (read here because tests pass their environment to loadConfig,
   * not to process.env). Parsed by `webhookSettings` in src/modules/webhooks/delivery.ts.
   */
  webhooks: { env: Record<string, string | undefined> };
  /** Object storage settings (`SLIPWAY_OBJECT_STORAGE_*`), parsed by src/modules/object-storage/settings.ts. */
  objectStorage: { env: Record<string, string | undefined> };
  simulation: { progression: Record<string, Progression>; faults: Omit<FaultRule, 'id' | 'created_at'>[] };
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

  const port = Number(str('port', 'PORT') ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid port "${str('port', 'PORT')}"`);
  return {
    port,
    host: str('host', 'HOST') ?? '127.0.0.1',
    dataDir: resolve(str('data-dir', 'DATA_DIR') ?? './data'),
    databaseUrl: str('database-url', 'DATABASE_URL'),
    logLevel: str('log-level', 'LOG_LEVEL') ?? 'info',
    production: flags.production === true || env.NODE_ENV === 'production',
    trustProxy: flags['trust-proxy'] === true || bool(env.SLIPWAY_TRUST_PROXY),
    tls,
    operatorToken: str('operator-token', 'SLIPWAY_OPERATOR_TOKEN'),
    bootstrapToken: env.SLIPWAY_BOOTSTRAP_TOKEN || undefined,
    secretKey: env.SLIPWAY_SECRET_KEY || undefined,
    brandPrefix: (env.SLIPWAY_BRAND_PREFIX || 'svl').toLowerCase(),
    rateLimits,
    bodyLimit: Number(env.SLIPWAY_BODY_LIMIT || 1024 * 1024),
    publicUrl: str('public-url', 'SLIPWAY_PUBLIC_URL'),
    jobs: {
      concurrency: Number(env.SLIPWAY_JOB_CONCURRENCY || 8),
      leaseMs: Number(env.SLIPWAY_JOB_LEASE_MS || 15_000),
      pollMs: Number(env.SLIPWAY_JOB_POLL_MS || 100),
      retryBaseMs: Number(env.SLIPWAY_JOB_RETRY_BASE_MS || 1000),
    },
    webhooks: { env: pickEnv(env, 'SLIPWAY_WEBHOOK_') },
    objectStorage: { env: pickEnv(env, 'SLIPWAY_OBJECT_STORAGE_') },
    simulation: {
      progression: parseProgression(str('sim-progression', 'SLIPWAY_SIM_PROGRESSION')),
      faults: parseFaults(env.SLIPWAY_SIM_FAULTS),
    },
  };
}

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
