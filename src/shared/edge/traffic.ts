// Real traffic (SLIPWAY_RUNTIME=local): every request the edge answers is kept in `edge_requests`
// for a few days and the eight traffic metric operations and the access logs of applications,
// static sites and load balancers are computed from those records, in the same shapes as the
// simulated traffic (src/shared/runtime/traffic.ts), which serves when there is no edge.
//
// Recording never slows a request: reports are queued in memory and written in batches (one
// multi-row insert per flush, every second or every BATCH requests); the queue is bounded (beyond
// MAX_QUEUE requests waiting, new reports are dropped and counted in a warning) and records older
// than the retention are deleted hourly.
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.js';
import type { Database } from '../db/index.js';
import type { EdgeRequestsTable } from '../db/schema.js';
import { badRequest } from '../errors.js';
import { newId } from '../ids.js';
import { accessLogLines, top, TrafficMetrics, windowRange, type TrafficMetric, type TrafficSource, type Window } from '../runtime/traffic.js';
import type { Served } from './index.js';

const BATCH = 500;
const MAX_QUEUE = 20_000;
const FLUSH_MS = 1000;
/** Records one metric computation reads at most (the newest win). */
const MAX_ROWS = 200_000;

export class TrafficRecorder {
  private queue: EdgeRequestsTable[] = [];
  private dropped = 0;
  private timer: NodeJS.Timeout | null = null;
  private sweeper: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private database: Database,
    private log: FastifyBaseLogger,
    private retentionDays: number,
  ) {}

  record(s: Served): void {
    if (this.queue.length >= MAX_QUEUE) {
      this.dropped++;
      return;
    }
    this.queue.push({
      id: newId(),
      service_id: s.owner.id,
      company_id: s.owner.companyId,
      at_ms: s.at.getTime(),
      method: s.method.slice(0, 16),
      path: s.path.slice(0, 2048),
      status: s.status,
      bytes: s.bytes,
      duration_ms: Math.round(s.durationMs * 100) / 100,
      client_ip: s.clientIp.slice(0, 64),
      host: s.host.slice(0, 255),
      user_agent: s.userAgent.slice(0, 512),
      referer: s.referer.slice(0, 1024),
      country: s.country,
      cached: s.cached ? 1 : 0,
    });
    if (this.queue.length >= BATCH) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes what is queued (flushes run one after another). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.flushing = this.flushing.then(async () => {
      if (this.dropped) {
        this.log.warn({ dropped: this.dropped }, 'edge request records dropped: the database does not keep up');
        this.dropped = 0;
      }
      while (this.queue.length) {
        const rows = this.queue.splice(0, BATCH);
        // SQLite takes at most 32,766 parameters per statement: 15 columns x 500 rows stays below.
        await this.database.db
          .insertInto('edge_requests')
          .values(rows)
          .execute()
          .catch((e: Error) => this.log.warn({ err: e.message, lost: rows.length }, 'edge request records lost'));
      }
    });
    return this.flushing;
  }

  /** Deletes the records older than the retention. */
  async sweep(): Promise<void> {
    const before = Date.now() - this.retentionDays * 86_400_000;
    await this.database.db.deleteFrom('edge_requests').where('at_ms', '<', before).execute();
  }

  start(): void {
    void this.sweep().catch(() => {});
    this.sweeper = setInterval(() => void this.sweep().catch((e: Error) => this.log.warn({ err: e.message }, 'edge request sweep failed')), 3_600_000);
    this.sweeper.unref();
  }

  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    await this.flush();
  }
}

type Row = Pick<EdgeRequestsTable, 'at_ms' | 'method' | 'path' | 'status' | 'duration_ms' | 'country'>;

const pathOnly = (p: string) => p.split('?')[0] || '/';
const round2 = (n: number) => Math.round(n * 100) / 100;
function groupBy<T>(xs: T[], key: (x: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const x of xs) {
    const k = key(x);
    const list = out.get(k);
    if (list) list.push(x);
    else out.set(k, [x]);
  }
  return out;
}
const avg = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

function percentile(xs: number[], p: number): number {
  if (!xs.length) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The traffic metrics of one service computed from its recorded requests. */
export class RecordedTraffic {
  constructor(private app: AppContext) {}

  private async rows(id: string, from: number, to: number): Promise<Row[]> {
    const rows = await this.app.database.db
      .selectFrom('edge_requests')
      .select(['at_ms', 'method', 'path', 'status', 'duration_ms', 'country'])
      .where('service_id', '=', id)
      .where('at_ms', '>=', from)
      .where('at_ms', '<=', to)
      .orderBy('at_ms', 'desc')
      .limit(MAX_ROWS)
      .execute();
    return rows.map((r) => ({ ...r, at_ms: Number(r.at_ms), duration_ms: Number(r.duration_ms), status: Number(r.status) }));
  }

  /** The requests of the window grouped by interval (the same instants as the simulated series). */
  private async buckets(s: TrafficSource, w: Window) {
    const { from, to, interval } = windowRange(w);
    const step = interval * 1000;
    const start = Math.floor(from.getTime() / step) * step;
    const rows = await this.rows(s.id, start, to.getTime());
    const out: { time: string; rows: Row[] }[] = [];
    for (let t = start; t <= to.getTime() && out.length < 10_000; t += step) out.push({ time: new Date(t).toISOString(), rows: [] });
    for (const r of rows) out[Math.floor((r.at_ms - start) / step)]?.rows.push(r);
    return { buckets: out, rows: rows.filter((r) => r.at_ms >= from.getTime()) };
  }

  requestsPerMinute = async (s: TrafficSource, w: Window) => (await this.buckets(s, w)).buckets.map((b) => ({ time: b.time, value: b.rows.length }));

  /** Per interval: the `percent` percentile of the response times (the average when not given). */
  responseTime = async (s: TrafficSource, w: Window & { percent?: number }) =>
    (await this.buckets(s, w)).buckets.map((b) => {
      const d = b.rows.map((r) => r.duration_ms);
      return { time: b.time, value: round2(w.percent ? percentile(d, w.percent) : avg(d)) };
    });

  responseTimeAvg = async (s: TrafficSource, w: Window) => ({
    average_response_time_ms: round2(avg((await this.buckets(s, w)).rows.map((r) => r.duration_ms))),
  });

  statusCodes = async (s: TrafficSource, w: Window) =>
    (await this.buckets(s, w)).buckets.map((b) => ({
      time: b.time,
      value: Object.fromEntries([...groupBy(b.rows, (r) => String(r.status))].map(([k, rs]) => [k, rs.length])),
    }));

  topStatusCodes = async (s: TrafficSource, w: Window) =>
    top(
      [...groupBy((await this.buckets(s, w)).rows, (r) => String(r.status))].map(([status, rs]) => ({ status, total: rs.length })),
      w.limit,
    );

  topCountries = async (s: TrafficSource, w: Window) =>
    top(
      [...groupBy((await this.buckets(s, w)).rows, (r) => r.country ?? 'unknown')].map(([country, rs]) => ({
        country,
        total: rs.length,
        response_time: round2(avg(rs.map((r) => r.duration_ms))),
      })),
      w.limit,
    );

  topPages = async (s: TrafficSource, w: Window) =>
    top(
      [...groupBy((await this.buckets(s, w)).rows, (r) => pathOnly(r.path))].map(([page, rs]) => ({ page, total: rs.length })),
      w.limit,
    );

  slowestRequests = async (s: TrafficSource, w: Window) =>
    [...groupBy((await this.buckets(s, w)).rows, (r) => `${r.method} ${pathOnly(r.path)}`)]
      .map(([id, rs]) => ({
        id,
        client_request_method: rs[0]!.method,
        client_request_path: pathOnly(rs[0]!.path),
        average_response_time_ms: round2(avg(rs.map((r) => r.duration_ms))),
        count_of_requests: rs.length,
      }))
      .sort((a, b) => b.average_response_time_ms - a.average_response_time_ms)
      .slice(0, w.limit ?? 10);
}

/** The access log lines of a service from its recorded requests: `from` defaults to an hour before `to`, `to` to now; newest last. */
async function recordedAccessLog(app: AppContext, s: TrafficSource, q: { from?: string; to?: string; filters?: string; limit?: number }) {
  const limit = Math.min(q.limit ?? 1000, 5000);
  const to = q.to ? Date.parse(q.to) : Date.now();
  const from = q.from ? Date.parse(q.from) : to - 60 * 60_000;
  if (to < from) throw badRequest('`to` must not be before `from`');
  const needle = q.filters?.toLowerCase();
  const out = [];
  let before = to + 1;
  // Newest first in pages, filtered here (the filter matches the formatted line).
  while (out.length < limit) {
    const rows = await app.database.db
      .selectFrom('edge_requests')
      .selectAll()
      .where('service_id', '=', s.id)
      .where('at_ms', '>=', from)
      .where('at_ms', '<', before)
      .orderBy('at_ms', 'desc')
      .orderBy('id', 'desc')
      .limit(1000)
      .execute();
    for (const r of rows) {
      const l = accessLine(s, r);
      if (!needle || l.message.toLowerCase().includes(needle) || l.severity === needle) out.push(l);
      if (out.length >= limit) break;
    }
    if (rows.length < 1000) break;
    before = Number(rows[rows.length - 1]!.at_ms);
  }
  return out.reverse();
}

function accessLine(s: TrafficSource, r: EdgeRequestsTable) {
  const at = Number(r.at_ms);
  const status = Number(r.status);
  const bytes = Number(r.bytes);
  const durationMs = Math.round(Number(r.duration_ms));
  const country = r.country ?? '-';
  return {
    id: r.id,
    message: `${r.client_ip} "${r.method} ${r.path} HTTP/1.1" ${status} ${bytes} ${durationMs}ms ${r.host} ${country}`,
    service: s.name,
    severity: status >= 500 ? 'error' : status >= 400 ? 'warning' : 'info',
    timestamp: new Date(at).toISOString(),
    tags: { kind: 'access', host: r.host },
    attributes: {
      client_ip: r.client_ip,
      method: r.method,
      path: r.path,
      status,
      bytes,
      duration_ms: durationMs,
      country,
      user_agent: r.user_agent,
      referer: r.referer,
      cached: r.cached === 1,
    },
    unix_timestamp: at / 1000,
  };
}

/** One traffic metric of a service: from the edge's records when the edge runs, simulated otherwise. */
export function trafficMetric(app: AppContext, s: TrafficSource, metric: TrafficMetric, w: Window): Promise<unknown> {
  return app.runtimes.edge ? new RecordedTraffic(app)[metric](s, w) : new TrafficMetrics(app)[metric](s, w);
}

/** The access log lines of a service: from the edge's records when the edge runs, simulated otherwise. */
export async function accessLog(app: AppContext, s: TrafficSource, q: { from?: string; to?: string; filters?: string; limit?: number }) {
  return app.runtimes.edge ? recordedAccessLog(app, s, q) : accessLogLines(app, s, q);
}
