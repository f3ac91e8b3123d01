// Rate limiting with windows that open at a bucket's first request. Tiers and limits follow the
// specification (Limits -> Rate limits). Where the counters live is a configuration choice
// (docs/api-behaviour.md "Rate limits"): in this process's memory (one server process), in Redis
// (REDIS_URL; one atomic script) or in the database (one upsert, shared by every process on one
// PostgreSQL). Each store counts exactly: one atomic step decides. The shared stores count a
// bucket's concurrent requests together: the requests of a bucket that arrive in the same turn of
// the event loop, or while one count of it is in flight, are added in one step, each taking its own
// place in the window.
import { sql } from 'kysely';
import type * as IORedis from 'ioredis';
import type { Db } from './db/index.js';
import type { Config, RateLimitConfig } from './config.js';
import { batchedPerKey, Coalescer } from './coalesce.js';
import { isPostgres } from './db/dialect.js';
import { all, first, reusable } from './db/reusable.js';
import { ApiError } from './errors.js';
import { lazy } from './lazy.js';

const ioredis = lazy<typeof IORedis>('ioredis');

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

/** One counted request: the bucket's count in its window, and the seconds until that window ends. */
interface Counted {
  count: number;
  reset: number;
}

/** Where the counters live. `count` adds one to `bucket` in its current window (opening one if none is open). */
export interface CounterStore {
  count(bucket: string, windowSeconds: number, now: number): Promise<Counted>;
  /** Drops windows that have ended (the stores that keep them). */
  sweep(now: number): Promise<void>;
  /** The buckets counted now (tests and diagnostics). */
  buckets(): Promise<string[]>;
  close(): Promise<void>;
}

/** Counters in this process: exact for one server process, nothing to share. */
export class MemoryStore implements CounterStore {
  private windows = new Map<string, { start: number; count: number; ends: number }>();

  async count(bucket: string, windowSeconds: number, now: number): Promise<Counted> {
    const nowSec = Math.floor(now / 1000);
    let w = this.windows.get(bucket);
    if (!w || w.ends <= nowSec) this.windows.set(bucket, (w = { start: nowSec, count: 0, ends: nowSec + windowSeconds }));
    w.count++;
    return { count: w.count, reset: Math.max(1, w.ends - nowSec) };
  }

  async sweep(now: number): Promise<void> {
    const nowSec = Math.floor(now / 1000);
    for (const [bucket, w] of this.windows) if (w.ends <= nowSec) this.windows.delete(bucket);
  }

  async buckets(): Promise<string[]> {
    return [...this.windows.keys()];
  }

  async close(): Promise<void> {}
}

/** One request to count: its window length and the time it arrived. */
interface Hit {
  windowSeconds: number;
  now: number;
}

/**
 * A shared store's counting, one round trip per bucket at a time: `add` adds `n` requests at
 * once and returns the count after them; the batch's requests take the counts up to it, in the
 * order they arrived (so every request has its own place, as if counted one by one). A count for
 * an idle bucket waits for the end of the event loop's turn (`gather`), so that the requests read
 * off the sockets in one turn share it, instead of the first of them making a round trip alone.
 */
abstract class SharedStore implements CounterStore {
  private batches = new Coalescer<Hit, Counted>(async (bucket, hits) => {
    const last = hits[hits.length - 1]!;
    const { count, reset } = await this.add(bucket, last.windowSeconds, last.now, hits.length);
    return hits.map((_, i) => ({ count: count - hits.length + 1 + i, reset }));
  }, true);

  count(bucket: string, windowSeconds: number, now: number): Promise<Counted> {
    return this.batches.call(bucket, { windowSeconds, now });
  }

  protected abstract add(bucket: string, windowSeconds: number, now: number, n: number): Promise<Counted>;
  abstract sweep(now: number): Promise<void>;
  abstract buckets(): Promise<string[]>;
  abstract close(): Promise<void>;
}

/** Adds `n` requests to a bucket's window (a new window when it ended); the count and the window's start after them. */
const addToWindow = reusable((_db, p: { bucket: string; windowSeconds: number; nowSec: number; n: number }) => {
  const expired = sql`rate_windows.window_start + ${p.windowSeconds} <= ${p.nowSec}`;
  return sql<{ count: number; window_start: number }>`
      INSERT INTO rate_windows (bucket, window_start, count) VALUES (${p.bucket}, ${p.nowSec}, ${p.n})
      ON CONFLICT (bucket) DO UPDATE SET
        count = CASE WHEN ${expired} THEN ${p.n} ELSE rate_windows.count + ${p.n} END,
        window_start = CASE WHEN ${expired} THEN ${p.nowSec} ELSE rate_windows.window_start END
      RETURNING count, window_start`;
});

/**
 * PostgreSQL: `addToWindow` for several buckets of one window length at once (`buckets`, `nows`
 * and `ns` side by side, the buckets in ascending order so that concurrent statements lock the
 * rows they share in the same order); each bucket's count and window start.
 */
const addToWindows = reusable((_db, p: { buckets: string[]; nows: number[]; ns: number[]; windowSeconds: number }) => {
  const expired = sql`rate_windows.window_start + ${p.windowSeconds} <= excluded.window_start`;
  return sql<{ bucket: string; count: number; window_start: number }>`
      INSERT INTO rate_windows (bucket, window_start, count)
      SELECT * FROM unnest(${p.buckets}::varchar[], ${p.nows}::bigint[], ${p.ns}::integer[]) AS w (bucket, window_start, count) ORDER BY bucket
      ON CONFLICT (bucket) DO UPDATE SET
        count = CASE WHEN ${expired} THEN excluded.count ELSE rate_windows.count + excluded.count END,
        window_start = CASE WHEN ${expired} THEN excluded.window_start ELSE rate_windows.window_start END
      RETURNING bucket, count, window_start`;
});

interface Addition {
  bucket: string;
  windowSeconds: number;
  nowSec: number;
  n: number;
}

/**
 * Counters in the database: one upsert decides, so processes sharing PostgreSQL share the count.
 * On PostgreSQL the buckets whose counts start in the same synchronous stretch (those gathered in
 * one turn, see SharedStore) share one statement per window length: one round trip, not one per
 * bucket (deployment triggers count per application).
 */
export class DatabaseStore extends SharedStore {
  private additions: (db: Db, a: Addition) => Promise<{ count: number; window_start: number }>;

  constructor(private db: Db) {
    super();
    this.additions = isPostgres(db)
      ? batchedPerKey((db: Db, items: Addition[]) => addAll(db, items))
      : (db, a) => first(db, addToWindow(db, a)).then((r) => r!);
  }

  protected async add(bucket: string, windowSeconds: number, now: number, n: number): Promise<Counted> {
    const nowSec = Math.floor(now / 1000);
    const row = await this.additions(this.db, { bucket, windowSeconds, nowSec, n });
    return { count: Number(row.count), reset: Math.max(1, Number(row.window_start) + windowSeconds - nowSec) };
  }

  /** Drops windows that ended more than an hour ago. */
  async sweep(now: number): Promise<void> {
    const cutoff = Math.floor(now / 1000) - 2 * 3600;
    await this.db.deleteFrom('rate_windows').where('window_start', '<', cutoff).execute();
  }

  async buckets(): Promise<string[]> {
    return (await this.db.selectFrom('rate_windows').select('bucket').execute()).map((r) => r.bucket);
  }

  async close(): Promise<void> {}
}

/** The additions to distinct buckets, one statement per window length (one alone: addToWindow); the rows in `items`' order. */
async function addAll(db: Db, items: Addition[]): Promise<{ count: number; window_start: number }[]> {
  if (items.length === 1) return [(await first(db, addToWindow(db, items[0]!)))!];
  const lengths = new Map<number, Addition[]>();
  for (const a of items) {
    const group = lengths.get(a.windowSeconds);
    if (group) group.push(a);
    else lengths.set(a.windowSeconds, [a]);
  }
  const rows = new Map<string, { count: number; window_start: number }>();
  await Promise.all(
    [...lengths].map(async ([windowSeconds, group]) => {
      group.sort((a, b) => (a.bucket < b.bucket ? -1 : a.bucket > b.bucket ? 1 : 0));
      const p = { buckets: group.map((a) => a.bucket), nows: group.map((a) => a.nowSec), ns: group.map((a) => a.n), windowSeconds };
      for (const r of await all(db, addToWindows(db, p))) rows.set(r.bucket, r);
    }),
  );
  return items.map((a) => rows.get(a.bucket)!);
}

/**
 * INCRBY, and on a window's first requests PEXPIRE: atomic as one script, so every process counts
 * against the same window. Returns the count and the milliseconds the window has left.
 */
const COUNT_SCRIPT = `
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if n == tonumber(ARGV[2]) or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`;

/** Counters in Redis (REDIS_URL): one script per request; windows expire by themselves. */
export class RedisStore extends SharedStore {
  private redis: IORedis.Redis;
  private prefix: string;

  constructor(url: string, prefix: string) {
    super();
    this.prefix = `${prefix}rl:`;
    this.redis = new (ioredis().Redis)(url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
    // A lost connection surfaces as failing commands (500s), not as an unhandled 'error' event.
    this.redis.on('error', () => {});
    this.redis.defineCommand('slipwayCount', { numberOfKeys: 1, lua: COUNT_SCRIPT });
  }

  protected async add(bucket: string, windowSeconds: number, _now: number, n: number): Promise<Counted> {
    const [count, ttl] = (await (this.redis as any).slipwayCount(this.prefix + bucket, windowSeconds * 1000, n)) as [number, number];
    return { count: Number(count), reset: Math.max(1, Math.ceil(Number(ttl) / 1000)) };
  }

  async sweep(): Promise<void> {}

  async buckets(): Promise<string[]> {
    const keys = await this.redis.keys(`${this.prefix}*`);
    return keys.map((k) => k.slice(this.prefix.length));
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/** How many buckets `RateLimiter.roomFor` remembers (the remembered ones are forgotten all at once beyond it). */
const MAX_REMEMBERED = 10_000;

export class RateLimiter {
  /** Per bucket, what its last count left (`remaining`) and until when that window lasts (ms). */
  private seen = new Map<string, { remaining: number; until: number }>();
  /** Told of every request refused 429, by tier (metrics). */
  onRejected?: (tier: Tier | 'unauthenticated') => void;

  constructor(
    private store: CounterStore,
    private limits: RateLimitConfig,
  ) {}

  /**
   * Whether the bucket's last count, in the window still open, left at least a quarter of the
   * tier's limit (and at least 10): a request that may be counted while it runs (a pure read, see
   * the router) is then unlikely to be over the limit, so little work is done for nothing. A
   * bucket near or over its limit, or not counted yet in this process, is counted first.
   */
  roomFor(bucket: string, tier: Tier | 'unauthenticated', now = Date.now()): boolean {
    const s = this.seen.get(bucket);
    return !!s && s.until > now && s.remaining >= Math.max(10, this.limits[tier] / 4);
  }

  /**
   * Counts one request against `bucket`; throws 429 (with headers) once the window's limit is
   * passed. A window opens with the first request of a bucket and lasts the tier's length
   * (x-ratelimit-reset counts down to its end); the next request after it opens a new one.
   */
  async hit(bucket: string, tier: Tier | 'unauthenticated', now = Date.now()): Promise<RateState> {
    const window = TIER_WINDOW_SECONDS[tier];
    const limit = this.limits[tier];
    const { count, reset } = await this.store.count(bucket, window, now);
    const state = { limit, remaining: Math.max(0, limit - count), reset };
    if (this.seen.size >= MAX_REMEMBERED && !this.seen.has(bucket)) this.seen.clear();
    this.seen.set(bucket, { remaining: state.remaining, until: now + reset * 1000 });
    if (count > limit) {
      this.onRejected?.(tier);
      throw new ApiError(
        429,
        `Rate limit exceeded: at most ${limit} requests per ${window === 3600 ? 'hour' : 'minute'} in this tier. Retry after ${reset} seconds.`,
        undefined,
        { ...headersFor(state), 'retry-after': String(reset) },
      );
    }
    return state;
  }

  sweep(now = Date.now()): Promise<void> {
    return this.store.sweep(now);
  }

  /** The buckets counted now. */
  buckets(): Promise<string[]> {
    return this.store.buckets();
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

export function counterStore(config: Pick<Config, 'rateLimitStore' | 'redisUrl' | 'redisPrefix'>, db: Db): CounterStore {
  const kind = config.rateLimitStore;
  if (kind === 'redis') return new RedisStore(config.redisUrl!, config.redisPrefix);
  if (kind === 'database') return new DatabaseStore(db);
  return new MemoryStore();
}

export function headersFor(s: RateState): Record<string, string> {
  return { 'x-ratelimit-limit': String(s.limit), 'x-ratelimit-remaining': String(s.remaining), 'x-ratelimit-reset': String(s.reset) };
}
