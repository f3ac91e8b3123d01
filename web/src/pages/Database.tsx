// A database: connection details (the API never returns a stored password, so the one shown is
// the one set here by a reset, revealed on demand), external access and IP rules, backups with
// create / restore (into this database or another) and their states, backup targets and external
// backups, restart, suspend / activate, and metrics charts.
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from '../api.js';
import { useCan } from '../auth.js';
import { MetricCharts } from '../Chart.js';
import { randomPassword } from '../create.js';
import { formatBytes } from '../format.js';
import { IpRestriction } from '../IpRestriction.js';
import { ActionButton, Badge, CopyButton, Empty, ErrorBox, Loaded, Secret, Section, submitWith, useAction, When } from '../ui.js';

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
      <ExternalAccess id={id} />
      <IpRestriction base={`/databases/${id}`} can={can} hint="Which addresses may connect to the external host (internal connections are not affected)." />
      <Backups id={id} />
      <BackupTargets id={id} />
      <ExternalBackups id={id} />
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
  const [into, setInto] = useState('');
  const restore = useAction(
    (backupId: string) =>
      call(
        api.POST('/databases/{id}/backups/{backup_id}/restore', {
          params: { path: { id, backup_id: backupId } },
          body: into ? { target_database_id: into } : null,
        }),
      ),
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
      {can ? <RestoreInto id={id} value={into} onChange={setInto} /> : null}
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
                    <ActionButton
                      label="Restore"
                      run={() => restore.mutate(x.id)}
                      confirm={`Restore this backup into ${into ? 'the chosen database' : 'this database'}? Its current data is replaced.`}
                    />
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

/** Where a restore writes: this database, or another of the company's of the same engine. */
function RestoreInto({ id, value, onChange }: { id: string; value: string; onChange: (v: string) => void }) {
  const db = useQuery({ queryKey: ['databases', id], queryFn: () => call(api.GET('/databases/{id}', { params: { path: { id } } })) });
  const all = useQuery({ queryKey: ['databases'], queryFn: () => call(api.GET('/databases', { params: { query: { limit: 100 } } })) });
  const others = (all.data?.data ?? []).filter((d) => d.id !== id && d.type === db.data?.type);
  return (
    <label className="inline">
      Restore into{' '}
      <select value={value} onChange={(e) => onChange(e.target.value)} aria-label={`Restore backups of this database into`}>
        <option value="">this database</option>
        {others.map((d) => (
          <option key={d.id} value={d.id}>
            {d.display_name}
          </option>
        ))}
      </select>
    </label>
  );
}

function ExternalAccess({ id }: { id: string }) {
  const can = useCan('DATABASE:UPDATE', id);
  const db = useQuery({ queryKey: ['databases', id], queryFn: () => call(api.GET('/databases/{id}', { params: { path: { id } } })) });
  const toggle = useAction(() => call(api.POST('/databases/{id}/external-connection/toggle', { params: { path: { id } } })), [['databases', id]]);
  const d = db.data;
  const on = !!d?.external_hostname;
  const busy = d?.status === 'updatingExternalConnection';
  return (
    <Section title="External access" id="external-access">
      <p data-external={busy ? 'changing' : on ? 'on' : 'off'}>
        {busy ? (
          <Badge status={d?.status} />
        ) : on ? (
          <>
            Reachable from the internet at <code>{`${d!.external_hostname}:${d!.external_port}`}</code>{' '}
            <CopyButton text={`${d!.external_hostname}:${d!.external_port}`} label="the external address" />
          </>
        ) : (
          'Off: only applications and databases connected internally can reach it.'
        )}
      </p>
      {can && d ? (
        <ActionButton
          label={on ? 'Turn external access off' : 'Turn external access on'}
          run={() => toggle.mutate()}
          pending={toggle.isPending || busy}
          confirm={on ? 'Close the external host? Clients connecting from outside are cut off.' : undefined}
        />
      ) : null}
      <ErrorBox error={toggle.error} />
    </Section>
  );
}

function BackupTargets({ id }: { id: string }) {
  const can = useCan('DATABASE:UPDATE', id);
  const key = ['backup-targets', id];
  const list = useQuery({ queryKey: key, queryFn: () => call(api.GET('/databases/{id}/backup-targets', { params: { path: { id } } })) });
  const buckets = useQuery({ queryKey: ['object-storage'], queryFn: () => call(api.GET('/object-storage', { params: { query: { limit: 100 } } })) });
  const [bucket, setBucket] = useState('');
  const [ext, setExt] = useState({ bucket_name: '', endpoint: '', access_key: '', secret_key: '' });
  const add = useAction(
    () =>
      call(
        api.POST('/databases/{id}/backup-targets', {
          params: { path: { id } },
          body: bucket ? { object_storage_id: bucket } : { ...ext, endpoint: ext.endpoint || undefined },
        }),
      ),
    [key],
    () => {
      setBucket('');
      setExt({ bucket_name: '', endpoint: '', access_key: '', secret_key: '' });
    },
  );
  const remove = useAction((t: string) => call(api.DELETE('/databases/{id}/backup-targets/{target_id}', { params: { path: { id, target_id: t } } })), [key]);
  const names = new Map((buckets.data?.data ?? []).map((b) => [b.id, b.display_name]));
  return (
    <Section title="Backup targets" id="backup-targets">
      <p className="hint">External backups are written to these S3 buckets: one of the company's buckets, or any S3-compatible bucket.</p>
      <ErrorBox error={remove.error} />
      <Loaded q={list} label="backup targets">
        {(ts) =>
          ts.length ? (
            <ul className="rows">
              {ts.map((t) => (
                <li key={t.id} className="row" data-backup-target={t.id}>
                  <strong>{t.object_storage_id ? (names.get(t.object_storage_id) ?? t.bucket_name) : t.bucket_name}</strong>
                  <span className="muted small">{t.object_storage_id ? 'bucket of this company' : (t.endpoint ?? 'S3')}</span>
                  {can ? <ActionButton label="Delete" danger run={() => remove.mutate(t.id)} confirm="Delete this backup target?" /> : null}
                </li>
              ))}
            </ul>
          ) : (
            <Empty>No backup targets.</Empty>
          )
        }
      </Loaded>
      {can ? (
        <form className="settings grid-form" aria-label="New backup target" onSubmit={submitWith(() => add.mutate())}>
          <div className="wide">
            <label htmlFor="target-bucket">Bucket</label>
            <select id="target-bucket" value={bucket} onChange={(e) => setBucket(e.target.value)}>
              <option value="">Another S3-compatible bucket (below)</option>
              {(buckets.data?.data ?? []).map((b) => (
                <option key={b.id} value={b.id}>
                  {b.display_name}
                </option>
              ))}
            </select>
          </div>
          {bucket
            ? null
            : (
                [
                  ['bucket_name', 'Bucket name', 'text'],
                  ['endpoint', 'Endpoint URL', 'url'],
                  ['access_key', 'Access key', 'text'],
                  ['secret_key', 'Secret key', 'password'],
                ] as const
              ).map(([k, label, type]) => (
                <div key={k}>
                  <label htmlFor={`target-${k}`}>{label}</label>
                  <input
                    id={`target-${k}`}
                    type={type}
                    autoComplete="off"
                    value={ext[k]}
                    onChange={(e) => setExt({ ...ext, [k]: e.target.value })}
                    required={k !== 'endpoint'}
                  />
                </div>
              ))}
          <div className="wide">
            <button type="submit" data-write disabled={add.isPending}>
              Add backup target
            </button>
          </div>
          <ErrorBox error={add.error} />
        </form>
      ) : null}
    </Section>
  );
}

function ExternalBackups({ id }: { id: string }) {
  const can = useCan('DATABASE:UPDATE', id);
  const key = ['external-backups', id];
  const [waiting, setWaiting] = useState<string | null>(null);
  const list = useQuery({
    queryKey: key,
    queryFn: () => call(api.GET('/databases/{id}/external-backups', { params: { path: { id } } })),
    // A new backup is listed once written; polled quickly until it is.
    refetchInterval: (q) => (waiting && !(q.state.data ?? []).some((b) => (b.name ?? b.id).includes(waiting)) ? 2_000 : 15_000),
  });
  const targets = useQuery({ queryKey: ['backup-targets', id], queryFn: () => call(api.GET('/databases/{id}/backup-targets', { params: { path: { id } } })) });
  const [name, setName] = useState('');
  const [target, setTarget] = useState('');
  const [into, setInto] = useState('');
  const create = useAction(
    () => call(api.POST('/databases/{id}/external-backups', { params: { path: { id } }, body: { name, backup_target_id: target || undefined } })),
    [key],
    () => {
      setWaiting(name);
      setName('');
    },
  );
  const one = (b: string) => ({ params: { path: { id, backup_id: b } } });
  const restore = useAction(
    (b: string) => call(api.POST('/databases/{id}/external-backups/{backup_id}/restore', { ...one(b), body: into ? { target_database_id: into } : null })),
    [['databases', id]],
  );
  const remove = useAction((b: string) => call(api.DELETE('/databases/{id}/external-backups/{backup_id}', one(b))), [key]);
  const hasTargets = (targets.data ?? []).length > 0;
  return (
    <Section title="External backups" id="external-backups">
      <ErrorBox error={restore.error ?? remove.error} />
      {can ? <RestoreInto id={id} value={into} onChange={setInto} /> : null}
      <Loaded q={list} label="external backups">
        {(bs) =>
          bs.length ? (
            <ul className="rows">
              {bs.map((b) => (
                <li key={b.id} className="row" data-external-backup={b.name ?? b.id}>
                  <strong>{b.name ?? b.id}</strong>
                  <span className="muted small">
                    {b.type ?? ''} {b.size == null ? '' : `· ${formatBytes(b.size)}`} · <When iso={b.created_at} />
                  </span>
                  {can ? (
                    <span className="actions">
                      <ActionButton
                        label="Restore"
                        run={() => restore.mutate(b.id)}
                        confirm={`Restore ${b.name ?? 'this backup'} into ${into ? 'the chosen database' : 'this database'}? Its current data is replaced.`}
                      />
                      <ActionButton label="Delete" danger run={() => remove.mutate(b.id)} confirm={`Delete ${b.name ?? 'this backup'}?`} />
                    </span>
                  ) : null}
                </li>
              ))}
            </ul>
          ) : (
            <Empty>{hasTargets ? 'No external backups yet.' : 'Add a backup target first.'}</Empty>
          )
        }
      </Loaded>
      {can && hasTargets ? (
        <form className="inline-form" aria-label="New external backup" onSubmit={submitWith(() => create.mutate())}>
          <label>
            Name <input value={name} onChange={(e) => setName(e.target.value)} required />
          </label>
          <label>
            Target{' '}
            <select value={target} onChange={(e) => setTarget(e.target.value)}>
              <option value="">The first target</option>
              {(targets.data ?? []).map((t) => (
                <option key={t.id} value={t.id}>
                  {t.bucket_name ?? t.id}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" data-write disabled={create.isPending}>
            Back up now
          </button>
          <ErrorBox error={create.error} />
        </form>
      ) : null}
    </Section>
  );
}
