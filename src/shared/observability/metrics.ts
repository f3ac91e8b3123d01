// Prometheus metrics (prom-client), one registry per server: what the request path, the job
// engine, the rate limiter, webhook deliveries and the edge count as they go, and what a scrape
// reads when it comes (the job queue, the database pool, the process). Label values are bounded:
// an operation's id (or a route's pattern, or `unknown`), never a raw path.
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { Database } from '../db/index.js';
import { jobQueue } from '../jobs.js';
import type { Served } from '../edge/index.js';

/** What a job's attempt came to: done, rescheduled (more steps), failed and retried later, failed for good, or taken over by another worker. */
export type JobOutcome = 'done' | 'rescheduled' | 'retried' | 'failed' | 'lease_lost';

/** What a webhook delivery attempt came to: a 2xx answer, another answer, no answer (network, timeout), or not sent (disabled, refused endpoint). */
export type DeliveryOutcome = 'success' | 'http_error' | 'network_error' | 'not_sent';

/** Upper bounds of the latency histograms, in seconds (prom-client's defaults). */
const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  labels: Record<string, string>;
  byStatus: Map<string | number, number>;
  /** Observations per bucket (not cumulative), the last one past the highest bound. */
  buckets: number[];
  sum: number;
}

/**
 * A counter by status and a latency histogram of the same series, kept as plain numbers per
 * series (found by one map lookup) and handed to the registry when scraped. prom-client's own
 * counters hash their label values on every increment: a few microseconds a request.
 */
class Tally {
  private series = new Map<unknown, Series>();

  constructor(
    registry: Registry,
    o: { counter: string; counterHelp: string; labelNames: string[]; histogram: string; histogramHelp: string; histogramLabels: string[] },
  ) {
    const series = this.series;
    new Counter({
      name: o.counter,
      help: o.counterHelp,
      labelNames: [...o.labelNames, 'status'],
      registers: [registry],
      collect(this: Counter) {
        this.reset();
        for (const s of series.values()) for (const [status, n] of s.byStatus) this.inc({ ...s.labels, status: String(status) }, n);
      },
    });
    const histogram = {
      name: o.histogram,
      help: o.histogramHelp,
      type: 'histogram',
      aggregator: 'sum',
      get: async () => ({
        name: o.histogram,
        help: o.histogramHelp,
        type: 'histogram',
        aggregator: 'sum',
        values: this.histogramValues(o.histogram, o.histogramLabels),
      }),
      reset: () => {},
    };
    registry.registerMetric(histogram as unknown as Metric);
  }

  /** One observation of the series `key` (its labels made once, by `labels`). */
  add(key: unknown, labels: () => Record<string, string>, status: string | number, seconds: number): void {
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { labels: labels(), byStatus: new Map(), buckets: new Array<number>(BOUNDS.length + 1).fill(0), sum: 0 }));
    s.byStatus.set(status, (s.byStatus.get(status) ?? 0) + 1);
    let b = 0;
    while (b < BOUNDS.length && seconds > BOUNDS[b]!) b++;
    s.buckets[b]!++;
    s.sum += seconds;
  }

  /** The histogram's samples, its series summed by `names` (labels it does not keep merge). */
  private histogramValues(name: string, names: string[]) {
    const merged = new Map<string, { labels: Record<string, string>; buckets: number[]; sum: number }>();
    for (const s of this.series.values()) {
      const labels = Object.fromEntries(names.map((n) => [n, s.labels[n] ?? '']));
      const key = JSON.stringify(labels);
      let m = merged.get(key);
      if (!m) merged.set(key, (m = { labels, buckets: new Array<number>(BOUNDS.length + 1).fill(0), sum: 0 }));
      s.buckets.forEach((n, i) => (m.buckets[i]! += n));
      m.sum += s.sum;
    }
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const m of merged.values()) {
      let cumulative = 0;
      BOUNDS.forEach((le, i) => {
        cumulative += m.buckets[i]!;
        values.push({ metricName: `${name}_bucket`, labels: { le, ...m.labels }, value: cumulative });
      });
      cumulative += m.buckets[BOUNDS.length]!;
      values.push({ metricName: `${name}_bucket`, labels: { le: '+Inf', ...m.labels }, value: cumulative });
      values.push({ metricName: `${name}_sum`, labels: m.labels, value: m.sum });
      values.push({ metricName: `${name}_count`, labels: m.labels, value: cumulative });
    }
    return values;
  }
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Tally;
  private readonly rejections: Counter<'tier'>;
  private readonly jobs: Counter<'kind' | 'outcome'>;
  private readonly deliveries: Counter<'outcome'>;
  private readonly edge: Tally;

  constructor(database: Database) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Tally(this.registry, {
      counter: 'slipway_http_requests_total',
      counterHelp: 'API requests answered, by operation, method and status',
      labelNames: ['operation', 'method'],
      histogram: 'slipway_http_request_duration_seconds',
      histogramHelp: 'Time to answer an API request, by operation',
      histogramLabels: ['operation'],
    });
    this.rejections = new Counter({
      name: 'slipway_rate_limit_rejections_total',
      help: 'Requests refused 429 by the rate limiter, by tier',
      labelNames: ['tier'],
      registers,
    });
    this.jobs = new Counter({ name: 'slipway_jobs_total', help: 'Job attempts, by kind and outcome', labelNames: ['kind', 'outcome'], registers });
    this.deliveries = new Counter({
      name: 'slipway_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by outcome',
      labelNames: ['outcome'],
      registers,
    });
    this.edge = new Tally(this.registry, {
      counter: 'slipway_edge_requests_total',
      counterHelp: 'Requests the edge answered, by service kind, service id and status class',
      labelNames: ['kind', 'id'],
      histogram: 'slipway_edge_request_duration_seconds',
      histogramHelp: 'Time the edge took to answer, by service kind',
      histogramLabels: ['kind'],
    });
    // Read when scraped: one grouped query over the jobs the claim index finds (due or running).
    const waiting = new Gauge({ name: 'slipway_jobs_waiting', help: 'Jobs due and not yet claimed, by kind', labelNames: ['kind'], registers });
    const running = new Gauge({ name: 'slipway_jobs_running', help: 'Jobs running under a lease, by kind', labelNames: ['kind'], registers });
    const oldest = new Gauge({
      name: 'slipway_jobs_oldest_waiting_seconds',
      help: 'How long the oldest due job of a kind has waited',
      labelNames: ['kind'],
      registers,
    });
    new Gauge({
      name: 'slipway_jobs_queue_depth',
      help: 'Jobs due and not yet claimed, all kinds',
      registers,
      async collect() {
        const queue = await jobQueue(database.db, new Date());
        waiting.reset();
        running.reset();
        oldest.reset();
        let depth = 0;
        const now = Date.now();
        for (const q of queue) {
          if (q.status === 'running') running.set({ kind: q.kind }, q.count);
          else {
            depth += q.count;
            waiting.set({ kind: q.kind }, q.count);
            oldest.set({ kind: q.kind }, Math.max(0, (now - Date.parse(q.oldest)) / 1000));
          }
        }
        this.set(depth);
      },
    });
    const pool = database.pool;
    if (pool) {
      const gauge = (name: string, help: string, read: () => number) =>
        new Gauge({
          name,
          help,
          registers,
          collect(this: Gauge) {
            this.set(read());
          },
        });
      gauge('slipway_db_pool_idle', 'PostgreSQL pool connections idle', () => pool.idleCount);
      gauge('slipway_db_pool_in_use', 'PostgreSQL pool connections in use', () => pool.totalCount - pool.idleCount);
      gauge('slipway_db_pool_waiting', 'Queries waiting for a pooled connection', () => pool.waitingCount);
    }
  }

  /** One answered request: `route` is what names it (an operation, or a route's pattern), `operation` its label. */
  request(route: unknown, operation: string, method: string, status: number, seconds: number): void {
    this.requests.add(route, () => ({ operation, method }), status, seconds);
  }

  rateLimited(tier: string): void {
    this.rejections.inc({ tier });
  }

  job(kind: string, outcome: JobOutcome): void {
    this.jobs.inc({ kind, outcome });
  }

  delivery(outcome: DeliveryOutcome): void {
    this.deliveries.inc({ outcome });
  }

  edgeServed(s: Served): void {
    const { kind, id } = s.owner;
    this.edge.add(`${kind} ${id}`, () => ({ kind, id }), `${Math.floor(s.status / 100)}xx`, s.durationMs / 1000);
  }
}
