// Process metrics: CPU and memory usage and limits and instance counts (simulated series shaped by
// the process's resource type, zero while it does not run; with the local runtime usage and
// instances are measured from the real processes), and the exit codes of cron and job runs.
import type { CallContext } from '../../shared/context.js';
import { ApiError, badRequest } from '../../shared/errors.js';
import { findApp } from '../applications/index.js';
import { runExits, runSpans } from './runs-storage.js';
import { DEFAULT_RESOURCE_TYPE, findProcess, instanceCount, resourceType } from './service.js';

export type ProcessMetric = 'cpu-usage' | 'cpu-limit' | 'memory-usage' | 'memory-limit' | 'instance-count';

function checkRange(fromS: string, toS: string, issues: boolean): { from: Date; to: Date } {
  const from = new Date(fromS);
  const to = new Date(toS);
  if (from.getTime() > to.getTime()) {
    const message = '`from` must not be later than `to`';
    throw issues ? new ApiError(400, message, { issues: [{ path: 'query.from', message }] }) : badRequest(message);
  }
  return { from, to };
}

export async function processMetric(
  ctx: CallContext,
  appId: string,
  processId: string,
  metric: ProcessMetric,
  q: { from: string; to: string; interval_in_seconds: number },
) {
  const { tx, app } = ctx;
  const appRow = await findApp(ctx, appId);
  const p = await findProcess(tx, appId, processId);
  const { from, to } = checkRange(q.from, q.to, true);
  const rt = resourceType(p.resource_type_id) ?? DEFAULT_RESOURCE_TYPE;
  const now = Date.now();
  const live = appRow.status === 'deploymentSuccess' && !appRow.is_suspended && p.rolled_out_at !== null;
  const since = p.rolled_out_at ? Date.parse(p.rolled_out_at) : Infinity;
  let running = (t: Date) => live && t.getTime() >= since && t.getTime() <= now;
  let instances = instanceCount(p);
  if (p.type === 'cron' || p.type === 'job') {
    // Run-to-completion processes run only while a run does.
    const runs = await runSpans(tx, p.id, from.toISOString(), to.toISOString());
    const spans = runs.map((r) => [Date.parse(r.started_at), r.ended_at ? Date.parse(r.ended_at) : now] as const);
    running = (t) => live && spans.some(([a, b]) => t.getTime() >= a && t.getTime() <= b);
    instances = 1;
  }
  // The local runtime measures usage and instances from the real processes; limits stay the resource type's.
  const measured =
    metric === 'cpu-usage' || metric === 'memory-usage' || metric === 'instance-count'
      ? app.runtimes.applications.usageSeries(p.id, metric, from, to, q.interval_in_seconds)
      : null;
  if (measured) return measured;
  const cores = rt.cpu_limit / 1000;
  const bytes = rt.memory_limit * 1024 * 1024;
  const shape = {
    'cpu-usage': { base: 0.05 * cores, spread: 0.45 * cores },
    'cpu-limit': { base: cores, spread: 0 },
    'memory-usage': { base: 0.3 * bytes, spread: 0.35 * bytes },
    'memory-limit': { base: bytes, spread: 0 },
    'instance-count': { base: instances, spread: 0 },
  }[metric];
  return app.simulated.series(p.id, metric, from, to, q.interval_in_seconds, { ...shape, running });
}

export async function exitCodes(ctx: CallContext, appId: string, processId: string, q: { from: string; to: string }) {
  const { tx } = ctx;
  await findApp(ctx, appId);
  const p = await findProcess(tx, appId, processId);
  const { from, to } = checkRange(q.from, q.to, false);
  const rows = await runExits(tx, p.id, from.toISOString(), to.toISOString());
  return rows.map((r) => ({ time: r.ended_at!, value: String(r.exit_code), description: r.termination_reason }));
}
