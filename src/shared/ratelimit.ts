// Rate limiting with windows that open at a bucket's first request, counted in the database, so every server process on one
// PostgreSQL shares them. Tiers and limits follow the specification (Limits -> Rate limits).
import { sql } from 'kysely';
import type { Db } from './db/index.js';
import type { RateLimitConfig } from './config.js';
import { ApiError } from './errors.js';

export type Tier = 'service_creation' | 'service_mutation' | 'deployment' | 'general_write' | 'logs' | 'read';

export const TIER_WINDOW_SECONDS: Record<Tier | 'unauthenticated', number> = {
  service_creation: 3600,
  service_mutation: 60,
  deployment: 60,
  general_write: 60,
  logs: 60,
  read: 60,
  unauthenticated: 60,
};

/** Tiers counted per company *and* service (the path's resource id). */
export const SERVICE_TIERS = new Set<Tier>(['service_mutation', 'deployment']);

export interface RateState {
  limit: number;
  remaining: number;
  reset: number;
}

export function bucketFor(tier: Tier, companyId: string, operationId: string, serviceId?: string): string {
  if (tier === 'read') return `c:${companyId}:read`;
  if (SERVICE_TIERS.has(tier)) return `c:${companyId}:${tier}:${operationId}:${serviceId ?? '-'}`;
  return `c:${companyId}:${tier}:${operationId}`;
}

export class RateLimiter {
  constructor(
    private db: Db,
    private limits: RateLimitConfig,
  ) {}

  /**
   * Counts one request against `bucket`; throws 429 (with headers) once the window's limit is
   * passed. A window opens with the first request of a bucket and lasts the tier's length
   * (x-ratelimit-reset counts down to its end); the next request after it opens a new one. One
   * upsert decides, so processes sharing PostgreSQL share the count.
   */
  async hit(bucket: string, tier: Tier | 'unauthenticated', now = Date.now()): Promise<RateState> {
    const window = TIER_WINDOW_SECONDS[tier];
    const limit = this.limits[tier];
    const nowSec = Math.floor(now / 1000);
    const expired = sql`rate_windows.window_start + ${window} <= ${nowSec}`;
    const r = await sql<{ count: number; window_start: number }>`
      INSERT INTO rate_windows (bucket, window_start, count) VALUES (${bucket}, ${nowSec}, 1)
      ON CONFLICT (bucket) DO UPDATE SET
        count = CASE WHEN ${expired} THEN 1 ELSE rate_windows.count + 1 END,
        window_start = CASE WHEN ${expired} THEN ${nowSec} ELSE rate_windows.window_start END
      RETURNING count, window_start`.execute(this.db);
    const row = r.rows[0]!;
    const count = Number(row.count);
    const reset = Math.max(1, Number(row.window_start) + window - nowSec);
    const state = { limit, remaining: Math.max(0, limit - count), reset };
    if (count > limit) {
      throw new ApiError(
        429,
        `Rate limit exceeded: at most ${limit} requests per ${window === 3600 ? 'hour' : 'minute'} in this tier. Retry after ${reset} seconds.`,
        undefined,
        { ...headersFor(state), 'retry-after': String(reset) },
      );
    }
    return state;
  }

  /** Drops windows that ended more than an hour ago. */
  async sweep(now = Date.now()): Promise<void> {
    const cutoff = Math.floor(now / 1000) - 2 * 3600;
    await this.db.deleteFrom('rate_windows').where('window_start', '<', cutoff).execute();
  }
}

export function headersFor(s: RateState): Record<string, string> {
  return { 'x-ratelimit-limit': String(s.limit), 'x-ratelimit-remaining': String(s.remaining), 'x-ratelimit-reset': String(s.reset) };
}
