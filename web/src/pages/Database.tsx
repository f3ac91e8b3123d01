// A database: connection details (the API never returns a stored password, so the one shown is
// the one set here by a reset, revealed on demand), backups with create / restore and their
// states, restart, suspend / activate, and metrics charts.
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from '../api.js';
import { useCan } from '../auth.js';
import { MetricCharts } from '../Chart.js';
import { randomPassword } from '../create.js';
import { ActionButton, Badge, CopyButton, Empty, ErrorBox, Loaded, Secret, Section, useAction, When } from '../ui.js';

const STEADY = new Set(['ready', 'error', 'passwordChangeFailed', 'restoringFailed']);

export function DatabasePage({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const can = useCan('DATABASE:UPDATE', id);
  const db = useQuery({
    queryKey: ['databases', id],
    queryFn: () => call(api.GET('/databases/{id}', path)),
    // Polled quickly while an operation or a backup runs.
    refetchInterval: (q) => (STEADY.has(String(q.state.data?.status)) && q.state.data?.backup_status === 'ready' ? 10_000 : 1_500),
  });
  const inv = [
    ['databases', id],
    ['backups', id],
  ];
  const restart = useAction(() => call(api.POST('/databases/{id}/restart', path)), inv);
  const suspend = useAction(() => call(api.POST('/databases/{id}/suspend', path)), inv);
  const activate = useAction(() => call(api.POST('/databases/{id}/activate', path)), inv);
  const [password, setPassword] = useState<string | null>(null);
  const reset = useAction(
    (pw: string) => call(api.POST('/databases/{id}/reset-password', { ...path, body: { new_password: pw } })).then(() => pw),
    inv,
    (pw) => setPassword(pw),
  );
  return (
    <main>
      <Loaded q={db} label="database">
        {(d) => (
          <>
            <div className="page-head">
              <h1>{d.display_name}</h1>
              <Badge status={d.is_suspended ? 'suspended' : (d.status ?? undefined)} />
              <span className="muted small">
                {d.type} {d.version}
              </span>
              {can ? (
                <div className="actions">
                  <ActionButton
                    label="Restart"
                    run={() => restart.mutate()}
                    pending={restart.isPending}
                    confirm="Restart the database? Connections are closed."
                  />
                  {d.is_suspended ? (
                    <ActionButton label="Activate" run={() => activate.mutate()} pending={activate.isPending} />
                  ) : (
                    <ActionButton label="Suspend" run={() => suspend.mutate()} pending={suspend.isPending} confirm="Suspend this database?" danger />
                  )}
                </div>
              ) : null}
            </div>
            <ErrorBox error={restart.error ?? suspend.error ?? activate.error ?? reset.error} />
            <Section title="Connection" id="connection">
              <dl className="facts">
                <dt>Internal host</dt>
                <dd>
                  <code>
                    {d.internal_hostname ?? '—'}:{d.internal_port ?? ''}
                  </code>
                </dd>
                <dt>External host</dt>
                <dd>
                  <code>{d.external_hostname ? `${d.external_hostname}:${d.external_port}` : 'not exposed'}</code>
                </dd>
                <dt>Database</dt>
                <dd>
                  <code>{d.db_name ?? '—'}</code>
                </dd>
                <dt>Password</dt>
                <dd>
                  {password ? (
                    <>
                      <Secret value={password} label="database password" /> <CopyButton text={password} />
                    </>
                  ) : (
                    <span className="muted">Not readable through the API; set a new one to see it.</span>
                  )}
                  {can ? (
                    <ActionButton
                      label="Reset password"
                      run={() => reset.mutate(randomPassword())}
                      pending={reset.isPending}
                      confirm="Set a new random password? Clients using the old one will fail to connect."
                    />
                  ) : null}
                </dd>
                <dt>Size</dt>
                <dd>
                  {d.resource_type_name ?? '—'} · {d.cluster_display_name ?? d.cluster_id}
                </dd>
              </dl>
            </Section>
          </>
        )}
      </Loaded>
      <Backups id={id} />
      <Section title="Metrics" id="metrics">
        <MetricCharts base={`/databases/${id}`} metrics={DB_METRICS} />
      </Section>
    </main>
  );
}

function Backups({ id }: { id: string }) {
  const can = useCan('DATABASE:UPDATE', id);
  // A restore in progress shows as the database's state, a backup being taken as its backup status
  // and in the list (restored only once ready).
  const db = useQuery({ queryKey: ['databases', id], queryFn: () => call(api.GET('/databases/{id}', { params: { path: { id } } })) });
  const list = useQuery({
    queryKey: ['backups', id],
    queryFn: () => call(api.GET('/databases/{id}/backups', { params: { path: { id } } })),
    refetchInterval: 3_000,
  });
  const create = useAction(
    () => call(api.POST('/databases/{id}/backups', { params: { path: { id } }, body: { display_name: `backup ${new Date().toISOString().slice(0, 19)}` } })),
    [
      ['backups', id],
      ['databases', id],
    ],
  );
  const restore = useAction(
    (backupId: string) => call(api.POST('/databases/{id}/backups/{backup_id}/restore', { params: { path: { id, backup_id: backupId } } })),
    [
      ['backups', id],
      ['databases', id],
    ],
  );
  return (
    <Section title="Backups" id="backups" actions={can ? <ActionButton label="Create backup" run={() => create.mutate()} pending={create.isPending} /> : null}>
      <p className="muted small" data-backup-state>
        Database state: <Badge status={db.data?.status ?? undefined} /> · backup status: <Badge status={db.data?.backup_status ?? undefined} />
      </p>
      <ErrorBox error={create.error ?? restore.error} />
      <Loaded q={list} label="backups">
        {(b) => {
          const items = b;
          return items.length ? (
            <ul className="rows">
              {items.map((x) => (
                <li key={x.id} className="row" data-backup={x.id}>
                  <strong>{x.display_name}</strong>
                  <Badge status={x.status === 'ready' ? 'available' : x.status} />
                  <span className="muted small">
                    {x.type} · <When iso={x.created_at} />
                  </span>
                  {can && x.status === 'ready' ? (
                    <ActionButton label="Restore" run={() => restore.mutate(x.id)} confirm="Restore this backup? Current data is replaced." />
                  ) : null}
                </li>
              ))}
            </ul>
          ) : (
            <Empty>No backups yet.</Empty>
          );
        }}
      </Loaded>
    </Section>
  );
}

const DB_METRICS = [
  { metric: 'cpu-usage', title: 'CPU usage', unit: 'cores' },
  { metric: 'memory-usage', title: 'Memory usage', unit: 'bytes' },
  { metric: 'storage-usage', title: 'Storage usage', unit: 'bytes' },
] as const;
