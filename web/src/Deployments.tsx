// Deployments of applications and static sites: the table (status in words, what was deployed,
// commit, when, how long, logs and cancel) and the log of the one selected, which follows while
// it runs. Both kinds' deployments share these fields.
import type { ReactNode } from 'react';
import { formatDuration } from './format.js';
import { DeploymentLogs } from './Logs.js';
import { ActionButton, Badge, When } from './ui.js';

export const FINAL = new Set(['success', 'failed', 'cancelled', 'skipped']);
export const running = (status: string | null | undefined) => !FINAL.has(String(status));

export interface DeploymentRow {
  id: string;
  status: string | null;
  commit_sha?: string | null;
  commit_message?: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/** `what` says what a row deployed (its trigger, or its lane and branch). */
export function DeploymentTable<D extends DeploymentRow>(props: {
  rows: D[];
  shown: string | null;
  onShow: (id: string) => void;
  what: { title: string; cell: (d: D) => ReactNode };
  onCancel?: (id: string) => void;
  cancelling?: boolean;
}) {
  return (
    <div className="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Status</th>
            <th scope="col">{props.what.title}</th>
            <th scope="col">Commit</th>
            <th scope="col">Started</th>
            <th scope="col">Took</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((dep) => (
            <tr key={dep.id} data-deployment={dep.id} aria-current={dep.id === props.shown ? 'true' : undefined}>
              <td>
                <Badge status={dep.status} />
              </td>
              <td>{props.what.cell(dep)}</td>
              <td className="small">
                {dep.commit_sha ? <code>{dep.commit_sha.slice(0, 7)}</code> : null} {dep.commit_message ?? ''}
              </td>
              <td>
                <When iso={dep.started_at ?? dep.created_at} />
              </td>
              <td>{dep.started_at && dep.finished_at ? formatDuration(Date.parse(dep.finished_at) - Date.parse(dep.started_at)) : '—'}</td>
              <td className="actions">
                <button type="button" className="link" onClick={() => props.onShow(dep.id)}>
                  Logs
                </button>
                {props.onCancel && running(dep.status) ? (
                  <ActionButton label="Cancel" run={() => props.onCancel!(dep.id)} pending={props.cancelling} danger />
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The log of the selected deployment (or the newest), below the table. */
export function SelectedLog({ kind, id, rows, shown }: { kind: 'applications' | 'static-sites'; id: string; rows: DeploymentRow[]; shown: string | null }) {
  if (!shown) return null;
  return <DeploymentLogs kind={kind} id={id} deploymentId={shown} running={running(rows.find((x) => x.id === shown)?.status)} />;
}
