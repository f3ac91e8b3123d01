// Runtime logs and traffic metrics of an application, served from what the runtime driver
// produced: log lines it wrote, and deterministic simulated traffic while the app is running.
import type { AppContext, CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { badRequest } from '../../shared/errors.js';
import { queryLogs, type LogQuery } from '../../shared/runtime/logs.js';
import { seeded } from '../../shared/runtime/driver.js';
import { findApp, type ApplicationsTable } from './storage.js';

export interface Window {
  from: string;
  to: string;
  interval_in_seconds?: number;
  limit?: number;
}

/** When the app started running (its first successful deployment), or null. */
export async function runningSince(tx: Tx, a: ApplicationsTable): Promise<number | null> {
  if (a.is_suspended) return null;
  const first = await tx.selectFrom('deployments').select('finished_at').where('app_id', '=', a.id).where('status', '=', 'success').orderBy('finished_at').limit(1).executeTakeFirst();
  return first?.finished_at ? Date.parse(first.finished_at) : null;
}

function range(w: Window) {
  const from = new Date(w.from);
  const to = new Date(w.to);
  if (to < from) throw badRequest('`to` must not be before `from`');
  const interval = w.interval_in_seconds ?? Math.max(60, Math.ceil((to.getTime() - from.getTime()) / 1000 / 60));
  if ((to.getTime() - from.getTime()) / 1000 / interval > 10_000) throw badRequest('The window holds more than 10,000 intervals; use a larger interval_in_seconds');
  return { from, to, interval };
}

export class TrafficMetrics {
  constructor(private app: AppContext) {}

  async series(tx: Tx, a: ApplicationsTable, metric: string, w: Window, base: number, spread: number) {
    const since = await runningSince(tx, a);
    const { from, to, interval } = range(w);
    return this.app.runtime.series(a.id, metric, from, to, interval, { base, spread, running: (t) => since !== null && t.getTime() >= since - interval * 1000 });
  }

  async total(tx: Tx, a: ApplicationsTable, w: Window) {
    const s = await this.series(tx, a, 'requests', w, 40, 80);
    return s.reduce((n, p) => n + p.value, 0);
  }

  requestsPerMinute = (tx: Tx, a: ApplicationsTable, w: Window) => this.series(tx, a, 'requests', w, 40, 80);
  responseTime = (tx: Tx, a: ApplicationsTable, w: Window) => this.series(tx, a, 'response-time', w, 30, 120);

  async responseTimeAvg(tx: Tx, a: ApplicationsTable, w: Window) {
    const s = (await this.responseTime(tx, a, w)).filter((p) => p.value > 0);
    return { average_response_time_ms: s.length ? Math.round((s.reduce((n, p) => n + p.value, 0) / s.length) * 100) / 100 : 0 };
  }

  async statusCodes(tx: Tx, a: ApplicationsTable, w: Window) {
    const s = await this.requestsPerMinute(tx, a, w);
    return s.map((p) => ({ time: p.time, value: p.value ? split(p.value, a.id + p.time) : {} }));
  }

  async topStatusCodes(tx: Tx, a: ApplicationsTable, w: Window) {
    const totals: Record<string, number> = {};
    for (const p of await this.statusCodes(tx, a, w)) for (const [k, v] of Object.entries(p.value)) totals[k] = (totals[k] ?? 0) + v;
    return top(Object.entries(totals).map(([status, total]) => ({ status, total })), w.limit);
  }

  async topCountries(tx: Tx, a: ApplicationsTable, w: Window) {
    const total = await this.total(tx, a, w);
    const shares: [string, number][] = [['US', 0.38], ['DE', 0.17], ['GB', 0.12], ['FR', 0.09], ['IN', 0.08], ['BR', 0.06], ['JP', 0.05], ['CA', 0.05]];
    return top(
      total ? shares.map(([country, share]) => ({ country, total: Math.round(total * share), response_time: Math.round(40 + 200 * seeded(a.id + country)) })) : [],
      w.limit,
    );
  }

  async topPages(tx: Tx, a: ApplicationsTable, w: Window) {
    const total = await this.total(tx, a, w);
    const pages: [string, number][] = [['/', 0.42], ['/api/items', 0.2], ['/login', 0.12], ['/about', 0.08], ['/static/app.js', 0.1], ['/healthz', 0.08]];
    return top(total ? pages.map(([page, share]) => ({ page, total: Math.round(total * share) })) : [], w.limit);
  }

  async slowestRequests(tx: Tx, a: ApplicationsTable, w: Window) {
    const total = await this.total(tx, a, w);
    if (!total) return [];
    const reqs: [string, string][] = [['POST', '/api/checkout'], ['GET', '/api/report'], ['GET', '/api/items'], ['POST', '/login'], ['GET', '/']];
    return reqs
      .map(([m, p], i) => ({
        id: `${m} ${p}`,
        client_request_method: m,
        client_request_path: p,
        average_response_time_ms: Math.round(900 / (i + 1) + 100 * seeded(a.id + p)),
        count_of_requests: Math.max(1, Math.round(total * 0.02 * (i + 1))),
      }))
      .slice(0, w.limit ?? 10);
  }
}

function split(n: number, seed: string): Record<string, number> {
  const errors = Math.round(n * 0.02 * seeded(seed + '5'));
  const redirects = Math.round(n * 0.05 * seeded(seed + '3'));
  const missing = Math.round(n * 0.04 * seeded(seed + '4'));
  return { '200': Math.max(0, Math.round(n) - errors - redirects - missing), '301': redirects, '404': missing, '500': errors };
}

function top<T extends { total: number }>(items: T[], limit = 10): T[] {
  return items.sort((x, y) => y.total - x.total).slice(0, limit);
}

export type TrafficMetric = 'requestsPerMinute' | 'responseTime' | 'responseTimeAvg' | 'statusCodes' | 'topStatusCodes' | 'topCountries' | 'slowestRequests' | 'topPages';

/** One traffic metric of the caller's application `appId` over a window. */
export async function trafficMetric(ctx: CallContext, appId: string, metric: TrafficMetric, w: Window) {
  const a = await findApp(ctx, appId);
  return new TrafficMetrics(ctx.app)[metric](ctx.tx, a, w);
}

/** The runtime log lines of the caller's application `appId`. */
export async function runtimeLogs(ctx: CallContext, appId: string, query: Omit<LogQuery, 'appId' | 'kind' | 'deploymentId'>) {
  const a = await findApp(ctx, appId);
  return queryLogs(ctx.tx, { appId, kind: 'runtime', ...query }, a.name);
}
