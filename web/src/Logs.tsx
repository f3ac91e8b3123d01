// Log views: lines that keep to the bottom as they arrive (unless the reader scrolled up), and a
// deployment's build log that follows while the deployment runs.
import { useEffect, useRef } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from './api.js';
import { Empty, Loaded } from './ui.js';

export interface LogLine {
  id: string;
  message: string;
  timestamp: string;
  severity?: string;
}

export const byTime = (lines: LogLine[]) => [...lines].sort((a, b) => a.timestamp.localeCompare(b.timestamp));

export function LogView({ lines, label }: { lines: LogLine[]; label: string }) {
  const ref = useRef<HTMLPreElement>(null);
  const stick = useRef(true);
  useEffect(() => {
    const el = ref.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [lines.length]);
  if (!lines.length) return <Empty>No log lines yet.</Empty>;
  return (
    <pre
      ref={ref}
      className="logs"
      tabIndex={0}
      aria-label={label}
      aria-live="polite"
      onScroll={(e) => {
        const el = e.currentTarget;
        stick.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
      }}
    >
      {lines.map((l) => (
        <div key={l.id} className={`log log-${l.severity ?? 'info'}`}>
          <span className="log-time">{new Date(l.timestamp).toLocaleTimeString()} </span>
          {l.message}
        </div>
      ))}
    </pre>
  );
}

/** The logs of one deployment of an application or a static site, read again while it runs. */
export function DeploymentLogs({
  kind,
  id,
  deploymentId,
  running,
}: {
  kind: 'applications' | 'static-sites';
  id: string;
  deploymentId: string;
  running: boolean;
}) {
  const logs = useQuery({
    queryKey: ['deployment-logs', id, deploymentId],
    // Both kinds share the operation's shape; the path differs only in its prefix.
    queryFn: () =>
      call(
        api.GET(`/${kind}/{id}/deployments/{deployment_id}/logs` as '/applications/{id}/deployments/{deployment_id}/logs', {
          params: { path: { id, deployment_id: deploymentId }, query: { limit: 1000 } },
        }),
      ),
    refetchInterval: running ? 1_500 : false,
  });
  const { refetch } = logs;
  // One last read when the deployment finishes, for the lines written at its end.
  useEffect(() => {
    if (!running) void refetch();
  }, [running, refetch]);
  return (
    <div data-logs="build">
      <h3>Build and deploy log</h3>
      <Loaded q={logs} label="logs">
        {(l) => <LogView lines={byTime(l as LogLine[])} label="Deployment log" />}
      </Loaded>
    </div>
  );
}
