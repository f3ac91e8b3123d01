// Build and runtime log lines written by the runtime driver, and the query behind the logs
// endpoints (`from`/`to`, a text filter, a limit; newest lines last). Lines belong to a service:
// `appId` is the id of an application or of a static site (the column holds either).
import type { Tx } from '../db/index.js';
import type { RuntimeLogsTable } from '../db/schema.js';
import { newId } from '../ids.js';
import { later } from '../db/postgres-client.js';
import { insertRows } from '../db/reusable.js';

export interface LogLine {
  message: string;
  severity?: 'debug' | 'info' | 'warning' | 'error';
  attributes?: Record<string, unknown>;
  processId?: string | null;
}

let seq = 0;

export async function writeLogs(
  tx: Tx,
  base: { companyId: string; appId: string; kind: RuntimeLogsTable['kind']; deploymentId?: string | null },
  lines: LogLine[],
  at = new Date(),
): Promise<void> {
  if (!lines.length) return;
  const ts = at.toISOString();
  await later(
    tx,
    insertRows(
      tx,
      'runtime_logs',
      lines.map((l) => ({
        id: newId(),
        company_id: base.companyId,
        app_id: base.appId,
        kind: base.kind,
        deployment_id: base.deploymentId ?? null,
        process_id: l.processId ?? null,
        severity: l.severity ?? 'info',
        message: l.message,
        ts,
        seq: (seq = (seq + 1) % 1_000_000_000),
        attributes: JSON.stringify(l.attributes ?? {}),
      })),
    ),
  );
}

/** The build log of a deployment as a real build writes it: each line as it comes, tagged with its phase. */
export function buildLogOf(db: Tx, d: { companyId: string; ownerId: string; deploymentId: string }, phase: string) {
  return (lines: LogLine[]) =>
    writeLogs(
      db,
      { companyId: d.companyId, appId: d.ownerId, kind: 'build', deploymentId: d.deploymentId },
      lines.map((l) => ({ ...l, attributes: { phase, ...(l.attributes ?? {}) } })),
    );
}

/** Removes every log line of a service (its deletion). */
export async function deleteLogs(tx: Tx, appId: string): Promise<void> {
  await tx.deleteFrom('runtime_logs').where('app_id', '=', appId).execute();
}

export interface LogQuery {
  appId: string;
  kind: RuntimeLogsTable['kind'];
  deploymentId?: string;
  from?: string;
  to?: string;
  filters?: string;
  limit?: number;
}

/** The contract's log entry shape. */
export async function queryLogs(tx: Tx, q: LogQuery, service: string) {
  let s = tx.selectFrom('runtime_logs').selectAll().where('app_id', '=', q.appId).where('kind', '=', q.kind);
  if (q.deploymentId) s = s.where('deployment_id', '=', q.deploymentId);
  if (q.from) s = s.where('ts', '>=', new Date(q.from).toISOString());
  if (q.to) s = s.where('ts', '<=', new Date(q.to).toISOString());
  const rows = await s
    .orderBy('ts', 'desc')
    .orderBy('seq', 'desc')
    .limit(Math.min(q.limit ?? 1000, 5000) * (q.filters ? 4 : 1))
    .execute();
  const needle = q.filters?.toLowerCase();
  const picked = (needle ? rows.filter((r) => r.message.toLowerCase().includes(needle) || r.severity === needle) : rows).slice(0, q.limit ?? 1000).reverse();
  return picked.map((r) => ({
    id: r.id,
    message: r.message,
    service,
    severity: r.severity,
    timestamp: r.ts,
    tags: { kind: r.kind, ...(r.deployment_id ? { deployment_id: r.deployment_id } : {}), ...(r.process_id ? { process_id: r.process_id } : {}) },
    attributes: JSON.parse(r.attributes) as Record<string, unknown>,
    unix_timestamp: Date.parse(r.ts) / 1000,
  }));
}
