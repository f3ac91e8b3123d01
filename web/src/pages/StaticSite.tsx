// A static site: its deployments (production and each branch's previews, polled while one runs)
// with build logs that follow, deploy and cancel, CDN purge, pretty URLs, domains, settings (build,
// deploy paths, previews), environment variables and traffic charts.
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from '../api.js';
import { useCan } from '../auth.js';
import { MetricCharts } from '../Chart.js';
import { Domains } from '../Domains.js';
import { EnvVars } from '../EnvVars.js';
import { GitDeliveries } from '../GitDeliveries.js';
import { DeploymentTable, running, SelectedLog } from '../Deployments.js';
import { navigate } from '../router.js';
import { deployPathFields, SettingsForm } from '../SettingsForm.js';
import { ActionButton, Badge, Empty, ErrorBox, Loaded, Section, useAction, submitWith } from '../ui.js';

export function StaticSitePage({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const can = useCan('STATIC_SITE:UPDATE', id);
  const canDelete = useCan('STATIC_SITE:DELETE', id);
  const site = useQuery({
    queryKey: ['static-sites', id],
    queryFn: () => call(api.GET('/static-sites/{id}', path)),
    refetchInterval: (q) => (q.state.data?.status === 'deploymentInProgress' ? 1_500 : 10_000),
  });
  const [notice, setNotice] = useState<string | null>(null);
  const purge = useAction(
    () => call(api.POST('/static-sites/{id}/purge-cache', path)),
    [],
    (r) => setNotice(r.message),
  );
  const remove = useAction(
    () => call(api.DELETE('/static-sites/{id}', path)),
    [['static-sites']],
    () => navigate('/'),
  );
  return (
    <main>
      <Loaded q={site} label="static site">
        {(s) => (
          <>
            <div className="page-head">
              <h1>{s.display_name}</h1>
              <Badge status={s.status} />
              {s.hostname ? (
                <a href={`https://${s.hostname}`} target="_blank" rel="noreferrer" className="small">
                  {s.hostname}
                </a>
              ) : null}
              <div className="actions">
                {can ? (
                  <ActionButton label="Purge CDN cache" run={() => purge.mutate()} pending={purge.isPending} confirm="Purge the CDN cache of this site?" />
                ) : null}
                {canDelete ? (
                  <ActionButton label="Delete site" danger run={() => remove.mutate()} pending={remove.isPending} confirm={`Delete ${s.display_name}?`} />
                ) : null}
              </div>
            </div>
            <ErrorBox error={purge.error ?? remove.error} />
            {notice ? (
              <p role="status" className="notice-line">
                {notice}
              </p>
            ) : null}
            <p className="muted">
              {s.repo_url} · production branch <code>{s.default_branch}</code>
            </p>
          </>
        )}
      </Loaded>
      <Deployments id={id} defaultBranch={site.data?.default_branch ?? 'main'} previews={site.data?.is_preview_enabled ?? false} />
      <GitDeliveries serviceId={id} />
      <Domains kind="static-sites" id={id} />
      <SiteSettings id={id} />
      <EnvVars base={`/static-sites/${id}/env-vars`} can={can} />
      <Section title="Traffic" id="metrics">
        <MetricCharts
          base={`/static-sites/${id}`}
          metrics={[
            { metric: 'requests-per-minute', title: 'Requests per minute', unit: 'count' },
            { metric: 'response-time', title: 'Response time', unit: 'ms' },
          ]}
        />
      </Section>
    </main>
  );
}

function Deployments({ id, defaultBranch, previews }: { id: string; defaultBranch: string; previews: boolean }) {
  const can = useCan('STATIC_SITE:UPDATE', id);
  const list = useQuery({
    queryKey: ['site-deployments', id],
    queryFn: () => call(api.GET('/static-sites/{id}/deployments', { params: { path: { id }, query: { limit: 50 } } })),
    refetchInterval: (q) => ((q.state.data?.data ?? []).some((d) => running(d.status)) ? 1_500 : 8_000),
  });
  const [selected, setSelected] = useState<string | null>(null);
  const [lane, setLane] = useState('all');
  const [branch, setBranch] = useState<string | null>(null);
  const [preview, setPreview] = useState(false);
  const inv = [
    ['site-deployments', id],
    ['static-sites', id],
  ];
  const trigger = useAction(
    () => call(api.POST('/static-sites/{id}/deployments', { params: { path: { id } }, body: { branch: branch ?? defaultBranch, is_preview: preview } })),
    inv,
    (d) => setSelected(d.id),
  );
  const cancel = useAction(
    (deploymentId: string) =>
      call(api.POST('/static-sites/{id}/deployments/{deployment_id}/cancel', { params: { path: { id, deployment_id: deploymentId } } })),
    inv,
  );
  const submit = submitWith(() => trigger.mutate());
  const all = list.data?.data ?? [];
  const lanes = ['all', 'production', ...new Set(all.filter((d) => d.is_preview).map((d) => `preview:${d.branch}`))];
  const shownRows = all.filter((d) => lane === 'all' || (lane === 'production' ? !d.is_preview : d.is_preview && `preview:${d.branch}` === lane));
  const shown = selected ?? shownRows[0]?.id ?? null;
  return (
    <Section
      title="Deployments"
      id="deployments"
      actions={
        <label className="inline">
          Show{' '}
          <select value={lane} onChange={(e) => setLane(e.target.value)} aria-label="Which deployments to show">
            {lanes.map((l) => (
              <option key={l} value={l}>
                {l === 'all' ? 'All' : l === 'production' ? 'Production' : `Previews of ${l.slice(8)}`}
              </option>
            ))}
          </select>
        </label>
      }
    >
      {can ? (
        <form className="inline-form" onSubmit={submit} aria-label="Deploy">
          <label>
            Branch <input value={branch ?? defaultBranch} onChange={(e) => setBranch(e.target.value)} required />
          </label>
          <label className="inline">
            <input type="checkbox" checked={preview} onChange={(e) => setPreview(e.target.checked)} disabled={!previews} /> Preview
            {previews ? '' : ' (enable previews in settings)'}
          </label>
          <button type="submit" className="primary" data-write disabled={trigger.isPending}>
            Deploy
          </button>
        </form>
      ) : null}
      <ErrorBox error={trigger.error ?? cancel.error} />
      <Loaded q={list} label="deployments">
        {() =>
          shownRows.length ? (
            <DeploymentTable
              rows={shownRows}
              shown={shown}
              onShow={setSelected}
              what={{
                title: 'Lane',
                cell: (dep) => (
                  <>
                    {dep.is_preview ? 'Preview' : 'Production'} · <code>{dep.branch}</code>
                  </>
                ),
              }}
              onCancel={can ? (dep) => cancel.mutate(dep) : undefined}
              cancelling={cancel.isPending}
            />
          ) : (
            <Empty>No deployments yet.</Empty>
          )
        }
      </Loaded>
      <SelectedLog kind="static-sites" id={id} rows={all} shown={shown} />
    </Section>
  );
}

function SiteSettings({ id }: { id: string }) {
  const can = useCan('STATIC_SITE:UPDATE', id);
  const site = useQuery({ queryKey: ['static-sites', id], queryFn: () => call(api.GET('/static-sites/{id}', { params: { path: { id } } })) });
  const [pretty, setPretty] = useState<boolean | null>(null);
  const inv = [['static-sites', id]];
  const save = useAction((body: Record<string, unknown>) => call(api.PATCH('/static-sites/{id}', { params: { path: { id } }, body: body as any })), inv);
  const togglePretty = useAction(
    () => call(api.POST('/static-sites/{id}/pretty-url/toggle', { params: { path: { id } } })),
    [],
    (r) => setPretty(r.is_turned_on),
  );
  return (
    <Section title="Settings" id="settings">
      <Loaded q={site}>
        {(s) => (
          <SettingsForm
            name="site"
            can={can}
            save={(body, done) => save.mutate(body, { onSuccess: done })}
            pending={save.isPending}
            error={save.error ?? togglePretty.error}
            fields={[
              { key: 'display_name', label: 'Display name', value: s.display_name, required: true },
              { key: 'default_branch', label: 'Production branch', value: s.default_branch, required: true },
              { key: 'install_command', label: 'Install command', value: s.install_command },
              { key: 'build_command', label: 'Build command', value: s.build_command },
              { key: 'published_directory', label: 'Published directory', value: s.published_directory },
              { key: 'root_directory', label: 'Root directory', value: s.root_directory },
              { key: 'node_version', label: 'Node version', value: s.node_version },
              { key: 'index_file', label: 'Index file', value: s.index_file, required: true },
              { key: 'error_file', label: 'Error file', value: s.error_file },
              ...deployPathFields(s),
            ]}
          >
            <label className="inline">
              <input type="checkbox" checked={s.auto_deploy} disabled={!can} onChange={(e) => save.mutate({ auto_deploy: e.target.checked })} /> Deploy on every
              push
            </label>
            <label className="inline">
              <input type="checkbox" checked={s.is_preview_enabled} disabled={!can} onChange={(e) => save.mutate({ is_preview_enabled: e.target.checked })} />{' '}
              Preview deployments for other branches
            </label>
            <p data-pretty-urls={pretty === null ? 'unknown' : pretty ? 'on' : 'off'}>
              Pretty URLs (<code>/about</code> served from <code>/about.html</code> or <code>/about/index.html</code>):{' '}
              {pretty === null ? 'new sites start with them off; the API tells their state when they are switched' : pretty ? 'on' : 'off'}{' '}
              {can ? (
                <ActionButton
                  label={pretty ? 'Turn pretty URLs off' : pretty === false ? 'Turn pretty URLs on' : 'Switch pretty URLs'}
                  run={() => togglePretty.mutate()}
                  pending={togglePretty.isPending}
                />
              ) : null}
            </p>
          </SettingsForm>
        )}
      </Loaded>
    </Section>
  );
}
