// Simulated HTTP traffic of a running service (applications, static sites): the traffic metrics
// and the access log lines, all derived from one deterministic series per service, so they agree
// with each other: a minute of the `requests` series holds that many access log lines, and the
// status-code breakdown of a point sums to the point's request count. Nothing before the service
// started running (`since`, e.g. its first successful deployment) or while it is stopped (null).
import type { AppContext } from '../context.js';
import { badRequest } from '../errors.js';
import { stableUuid } from '../ids.js';
import { seeded } from './driver.js';

/** The service whose traffic is simulated. */
export interface TrafficSource {
  /** Seeds every series and line: the same service always shows the same traffic. */
  id: string;
  /** Shown as the log lines' `service`. */
  name: string;
  /** The hostname the requests were sent to. */
  host: string;
  /** When it started serving (ms since the epoch), or null when it serves nothing. */
  since: number | null;
}

export interface Window {
  from: string;
  to: string;
  interval_in_seconds?: number;
  limit?: number;
}

export type TrafficMetric =
  'requestsPerMinute' | 'responseTime' | 'responseTimeAvg' | 'statusCodes' | 'topStatusCodes' | 'topCountries' | 'slowestRequests' | 'topPages';

export function windowRange(w: Window) {
  const from = new Date(w.from);
  const to = new Date(w.to);
  if (to < from) throw badRequest('`to` must not be before `from`');
  const interval = w.interval_in_seconds ?? Math.max(60, Math.ceil((to.getTime() - from.getTime()) / 1000 / 60));
  if ((to.getTime() - from.getTime()) / 1000 / interval > 10_000)
    throw badRequest('The window holds more than 10,000 intervals; use a larger interval_in_seconds');
  return { from, to, interval };
}

const REQUESTS = { base: 40, spread: 80 };

/** Requests are counted in whole requests, so every view of them (metrics, access log lines) agrees. */
const whole = (points: { time: string; value: number }[]) => points.map((p) => ({ time: p.time, value: Math.round(p.value) }));

export class TrafficMetrics {
  constructor(private app: AppContext) {}

  private series(s: TrafficSource, metric: string, w: Window, base: number, spread: number) {
    const { from, to, interval } = windowRange(w);
    const since = s.since;
    return this.app.simulated.series(s.id, metric, from, to, interval, {
      base,
      spread,
      running: (t) => since !== null && t.getTime() >= since - interval * 1000,
    });
  }

  private async total(s: TrafficSource, w: Window) {
    return (await this.requestsPerMinute(s, w)).reduce((n, p) => n + p.value, 0);
  }

  requestsPerMinute = async (s: TrafficSource, w: Window) => whole(this.series(s, 'requests', w, REQUESTS.base, REQUESTS.spread));
  responseTime = async (s: TrafficSource, w: Window) => this.series(s, 'response-time', w, 30, 120);

  async responseTimeAvg(s: TrafficSource, w: Window) {
    const pts = (await this.responseTime(s, w)).filter((p) => p.value > 0);
    return { average_response_time_ms: pts.length ? Math.round((pts.reduce((n, p) => n + p.value, 0) / pts.length) * 100) / 100 : 0 };
  }

  async statusCodes(s: TrafficSource, w: Window) {
    return (await this.requestsPerMinute(s, w)).map((p) => ({ time: p.time, value: p.value ? split(p.value, s.id + p.time) : {} }));
  }

  async topStatusCodes(s: TrafficSource, w: Window) {
    const totals: Record<string, number> = {};
    for (const p of await this.statusCodes(s, w)) for (const [k, v] of Object.entries(p.value)) totals[k] = (totals[k] ?? 0) + v;
    return top(
      Object.entries(totals).map(([status, total]) => ({ status, total })),
      w.limit,
    );
  }

  async topCountries(s: TrafficSource, w: Window) {
    const total = await this.total(s, w);
    return top(
      total
        ? COUNTRIES.map(([country, share]) => ({ country, total: Math.round(total * share), response_time: Math.round(40 + 200 * seeded(s.id + country)) }))
        : [],
      w.limit,
    );
  }

  async topPages(s: TrafficSource, w: Window) {
    const total = await this.total(s, w);
    const pages: [string, number][] = [
      ['/', 0.42],
      ['/api/items', 0.2],
      ['/login', 0.12],
      ['/about', 0.08],
      ['/static/app.js', 0.1],
      ['/healthz', 0.08],
    ];
    return top(total ? pages.map(([page, share]) => ({ page, total: Math.round(total * share) })) : [], w.limit);
  }

  async slowestRequests(s: TrafficSource, w: Window) {
    const total = await this.total(s, w);
    if (!total) return [];
    const reqs: [string, string][] = [
      ['POST', '/api/checkout'],
      ['GET', '/api/report'],
      ['GET', '/api/items'],
      ['POST', '/login'],
      ['GET', '/'],
    ];
    return reqs
      .map(([m, p], i) => ({
        id: `${m} ${p}`,
        client_request_method: m,
        client_request_path: p,
        average_response_time_ms: Math.round(900 / (i + 1) + 100 * seeded(s.id + p)),
        count_of_requests: Math.max(1, Math.round(total * 0.02 * (i + 1))),
      }))
      .slice(0, w.limit ?? 10);
  }
}

/** Splits `n` requests into status codes; the parts sum to `n`. */
function split(n: number, seed: string): Record<string, number> {
  const errors = Math.round(n * 0.02 * seeded(seed + '5'));
  const redirects = Math.round(n * 0.05 * seeded(seed + '3'));
  const missing = Math.round(n * 0.04 * seeded(seed + '4'));
  return { '200': Math.max(0, Math.round(n) - errors - redirects - missing), '301': redirects, '404': missing, '500': errors };
}

export function top<T extends { total: number }>(items: T[], limit = 10): T[] {
  return items.sort((x, y) => y.total - x.total).slice(0, limit);
}

// --- Access logs -------------------------------------------------------------------------------

const PAGES: [string, string, number][] = [
  ['GET', '/', 0.42],
  ['GET', '/api/items', 0.2],
  ['POST', '/login', 0.12],
  ['GET', '/about', 0.08],
  ['GET', '/static/app.js', 0.1],
  ['GET', '/healthz', 0.08],
];
const COUNTRIES: [string, number][] = [
  ['US', 0.38],
  ['DE', 0.17],
  ['GB', 0.12],
  ['FR', 0.09],
  ['IN', 0.08],
  ['BR', 0.06],
  ['JP', 0.05],
  ['CA', 0.05],
];
const pick = <T extends unknown[]>(items: T[], r: number): T => {
  let acc = 0;
  for (const it of items) if (r < (acc += it[it.length - 1] as number)) return it;
  return items[items.length - 1]!;
};
/** Most recent minutes scanned for one request (one week). */
const MAX_MINUTES = 7 * 24 * 60;

/**
 * Simulated HTTP access log lines: per minute as many requests as the requests-per-minute metric
 * shows (same seeds), each with a deterministic method, path, status, country and duration.
 * `from` defaults to an hour before `to`, `to` to now. Newest lines last.
 */
export function accessLogLines(app: AppContext, s: TrafficSource, q: { from?: string; to?: string; filters?: string; limit?: number }) {
  const limit = Math.min(q.limit ?? 1000, 5000);
  const to = q.to ? Date.parse(q.to) : Date.now();
  const from = q.from ? Date.parse(q.from) : to - 60 * 60_000;
  if (to < from) throw badRequest('`to` must not be before `from`');
  const since = s.since;
  if (since === null) return [];
  const needle = q.filters?.toLowerCase();
  const out: ReturnType<typeof line>[] = [];
  const minute = 60_000;
  const lastMinute = Math.floor(to / minute) * minute;
  for (let t = lastMinute, scanned = 0; t >= from - minute && t >= since - minute && scanned < MAX_MINUTES && out.length < limit; t -= minute, scanned++) {
    const [point] = app.simulated.series(s.id, 'requests', new Date(t), new Date(t), 60, { ...REQUESTS, running: (at) => at.getTime() >= since - minute });
    const count = Math.round(point?.value ?? 0);
    const lines = Array.from({ length: count }, (_, i) => line(s, t, i))
      .filter((l) => l.unix_timestamp * 1000 >= Math.max(from, since) && l.unix_timestamp * 1000 <= to)
      .filter((l) => !needle || l.message.toLowerCase().includes(needle) || l.severity === needle)
      .sort((x, y) => y.unix_timestamp - x.unix_timestamp || (x.id < y.id ? 1 : -1));
    for (const l of lines) if (out.length < limit) out.push(l);
  }
  return out.reverse();
}

function line(s: TrafficSource, minuteStart: number, i: number) {
  const seed = `${s.id}:access:${minuteStart}:${i}`;
  const r = (k: string) => seeded(`${seed}:${k}`);
  const at = minuteStart + Math.floor(r('t') * 60_000);
  const [method, path] = pick(PAGES, r('page'));
  const sr = r('status');
  const status = sr < 0.02 * r('e') ? 500 : sr < 0.06 ? 404 : sr < 0.11 ? 301 : 200;
  const [country] = pick(COUNTRIES, r('country'));
  const durationMs = Math.round(30 + 120 * r('ms') + (status === 500 ? 400 : 0));
  const bytes = status === 301 ? 0 : Math.round(200 + 20_000 * r('bytes'));
  const ip = `${11 + Math.floor(r('ip1') * 200)}.${Math.floor(r('ip2') * 256)}.${Math.floor(r('ip3') * 256)}.${1 + Math.floor(r('ip4') * 254)}`;
  const ts = new Date(at).toISOString();
  return {
    id: stableUuid(seed),
    message: `${ip} "${method} ${path} HTTP/1.1" ${status} ${bytes} ${durationMs}ms ${s.host} ${country}`,
    service: s.name,
    severity: status >= 500 ? 'error' : status >= 400 ? 'warning' : 'info',
    timestamp: ts,
    tags: { kind: 'access', host: s.host },
    attributes: { client_ip: ip, method, path, status, bytes, duration_ms: durationMs, country },
    unix_timestamp: at / 1000,
  };
}
