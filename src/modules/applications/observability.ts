// Runtime logs and traffic metrics of an application, served from what the runtime driver
// produced: log lines it wrote, and the requests the edge answered (src/shared/edge/traffic.ts)
// or, without an edge, deterministic simulated traffic while the app is running
// (src/shared/runtime/traffic.ts, shared with static sites).
import type { CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { queryLogs, type LogQuery } from '../../shared/runtime/logs.js';
import { trafficMetric as metricOf } from '../../shared/edge/traffic.js';
import type { TrafficMetric, TrafficSource, Window } from '../../shared/runtime/traffic.js';
import { firstSuccessFinishedAt } from './deployments-storage.js';
import { findApp } from './find.js';
import type { ApplicationsTable } from './storage.js';

/** When the app started running (its first successful deployment), or null. */
export async function runningSince(tx: Tx, a: ApplicationsTable): Promise<number | null> {
  if (a.is_suspended) return null;
  const finishedAt = await firstSuccessFinishedAt(tx, a.id);
  return finishedAt ? Date.parse(finishedAt) : null;
}

/** The application as a source of simulated traffic (src/shared/runtime/traffic.ts). */
export async function trafficOf(tx: Tx, a: ApplicationsTable): Promise<TrafficSource> {
  return { id: a.id, name: a.name, host: a.temp_domain, since: await runningSince(tx, a) };
}

/** One traffic metric of the caller's application `appId` over a window. */
export async function trafficMetric(ctx: CallContext, appId: string, metric: TrafficMetric, w: Window) {
  const a = await findApp(ctx, appId);
  return metricOf(ctx.app, await trafficOf(ctx.tx, a), metric, w);
}

/** The runtime log lines of the caller's application `appId`. */
export async function runtimeLogs(ctx: CallContext, appId: string, query: Omit<LogQuery, 'appId' | 'kind' | 'deploymentId'>) {
  const a = await findApp(ctx, appId);
  return queryLogs(ctx.tx, { appId, kind: 'runtime', ...query }, a.name);
}
