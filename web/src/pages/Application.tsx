// An application: its deployments (polled while any is in progress), trigger / cancel / rollback,
// build logs and runtime logs that follow as they grow, processes and scaling, cron runs,
// environment variables (hidden until revealed), domains with DNS instructions, settings, metrics.
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from '../api.js';
import { useCan } from '../auth.js';
import { MetricCharts, metricWindow } from '../Chart.js';
import { ApplicationExtras } from './ApplicationMore.js';
import { BUILD_TYPES } from '../create.js';
import { Domains } from '../Domains.js';
import { EnvVars } from '../EnvVars.js';
import { GitDeliveries } from '../GitDeliveries.js';
import { DeploymentTable, running, SelectedLog } from '../Deployments.js';
import { byTime, LogView, type LogLine } from '../Logs.js';
import { deployPathFields, SettingsForm, type TextField } from '../SettingsForm.js';
import { ActionButton, Badge, Empty, ErrorBox, Loaded, Section, useAction, When } from '../ui.js';

export function ApplicationPage({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const app = useQuery({ queryKey: ['applications', id], queryFn: () => call(api.GET('/applications/{id}', path)), refetchInterval: 5_000 });
  const canUpdate = useCan('APP:UPDATE', id);
  const suspend = useAction(() => call(api.POST('/applications/{id}/suspend', path)), [['applications', id]]);
  const activate = useAction(() => call(api.POST('/applications/{id}/activate', path)), [['applications', id]]);
  return (
    <main>
      <Loaded q={app} label="application">
        {(a) => (
          <>
            <div className="page-head">
              <h1>{a.display_name}</h1>
              <Badge status={a.is_suspended ? 'suspended' : (a.status ?? undefined)} />
              <span className="muted small">{a.name}</span>
              {canUpdate ? (
                <div className="actions">
                  {a.is_suspended ? (
                    <ActionButton label="Activate" run={() => activate.mutate()} pending={activate.isPending} />
                  ) : (
                    <ActionButton label="Suspend" run={() => suspend.mutate()} pending={suspend.isPending} confirm="Suspend this application?" />
                  )}
                </div>
              ) : null}
            </div>
            <ErrorBox error={suspend.error ?? activate.error} />
            <p className="muted">
              Source: {a.source} {a.docker_image ?? a.repo_url ?? ''}
            </p>
          </>
        )}
      </Loaded>
      <Deployments id={id} />
      <GitDeliveries serviceId={id} />
      <RuntimeLogs id={id} />
      <Processes id={id} />
      <ApplicationExtras id={id} />
      <EnvVars base={`/applications/${id}/env-vars`} can={canUpdate} extra={{ is_runtime: true, is_buildtime: false }} />
      <Domains kind="applications" id={id} />
      <Settings id={id} />
      <Section title="Metrics" id="metrics">
        <MetricCharts base={`/applications/${id}`} metrics={APP_METRICS} />
      </Section>
    </main>
  );
}

function Deployments({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const can = useCan('APP:UPDATE', id);
  const list = useQuery({
    queryKey: ['deployments', id],
    queryFn: () => call(api.GET('/applications/{id}/deployments', { params: { path: { id }, query: { limit: 20 } } })),
    // Live status: poll quickly while a deployment runs, slowly otherwise.
    refetchInterval: (q) => ((q.state.data?.data ?? []).some((d) => running(d.status)) ? 1_500 : 8_000),
  });
  const [selected, setSelected] = useState<string | null>(null);
  const trigger = useAction(
    () => call(api.POST('/applications/{id}/deployments', { ...path, body: {} })),
    [['deployments', id]],
    (d) => setSelected(d.id),
  );
  const rollback = useAction(
    () => call(api.POST('/applications/{id}/deployments/rollback', path)),
    [['deployments', id]],
    (d: any) => setSelected(d?.id ?? null),
  );
  const cancel = useAction(
    (deploymentId: string) =>
      call(api.POST('/applications/{id}/deployments/{deployment_id}/cancel', { params: { path: { id, deployment_id: deploymentId } } })),
    [['deployments', id]],
  );
  const shown = selected ?? list.data?.data[0]?.id ?? null;
  return (
    <Section
      title="Deployments"
      id="deployments"
      actions={
        can ? (
          <>
            <ActionButton label="Deploy" run={() => trigger.mutate()} pending={trigger.isPending} />
            <ActionButton label="Roll back" run={() => rollback.mutate()} pending={rollback.isPending} confirm="Roll back to the last successful deployment?" />
          </>
        ) : null
      }
    >
      <ErrorBox error={trigger.error ?? rollback.error ?? cancel.error} />
      <Loaded q={list} label="deployments">
        {(d) =>
          d.data.length ? (
            <DeploymentTable
              rows={d.data}
              shown={shown}
              onShow={setSelected}
              what={{ title: 'Trigger', cell: (dep) => String(dep.trigger ?? dep.type ?? '') }}
              onCancel={can ? (dep) => cancel.mutate(dep) : undefined}
              cancelling={cancel.isPending}
            />
          ) : (
            <Empty>No deployments yet.</Empty>
          )
        }
      </Loaded>
      <SelectedLog kind="applications" id={id} rows={list.data?.data ?? []} shown={shown} />
    </Section>
  );
}

function RuntimeLogs({ id }: { id: string }) {
  const [follow, setFollow] = useState(true);
  const logs = useQuery({
    queryKey: ['runtime-logs', id],
    queryFn: () => call(api.GET('/applications/{id}/runtime-logs', { params: { path: { id }, query: { limit: 500 } } })),
    refetchInterval: follow ? 3_000 : false,
  });
  return (
    <Section
      title="Runtime logs"
      id="runtime-logs"
      actions={
        <label className="inline">
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow
        </label>
      }
    >
      <Loaded q={logs} label="logs">
        {(l) => <LogView lines={byTime(l as LogLine[])} label="Runtime log" />}
      </Loaded>
    </Section>
  );
}

function Processes({ id }: { id: string }) {
  const can = useCan('APP:UPDATE', id);
  const list = useQuery({ queryKey: ['processes', id], queryFn: () => call(api.GET('/applications/{id}/processes', { params: { path: { id } } })) });
  const scale = useAction(
    (v: { pid: string; count: number }) =>
      call(
        api.PATCH('/applications/{id}/processes/{process_id}', {
          params: { path: { id, process_id: v.pid } },
          body: { scaling_strategy: { type: 'manual', config: { instanceCount: v.count } } },
        }),
      ),
    [['processes', id]],
  );
  const run = useAction(
    (pid: string) => call(api.POST('/applications/{id}/processes/{process_id}/trigger', { params: { path: { id, process_id: pid } } })),
    [['processes', id]],
  );
  return (
    <Section title="Processes" id="processes">
      <ErrorBox error={scale.error ?? run.error} />
      <Loaded q={list} label="processes">
        {(d) =>
          d.data.length ? (
            <ul className="rows">
              {d.data.map((p) => {
                const s = p.scaling_strategy as any;
                const count = s?.type === 'manual' ? s.config?.instanceCount : undefined;
                return (
                  <li key={p.id} className="row" data-process={p.key}>
                    <strong>{p.display_name ?? p.key}</strong>
                    <span className="muted small">
                      {String(p.type ?? '')} {p.entrypoint}
                    </span>
                    {p.schedule ? <span>cron {String(p.schedule)}</span> : null}
                    <span>
                      {s?.type === 'horizontal'
                        ? `autoscale ${s.config?.minInstanceCount}–${s.config?.maxInstanceCount}`
                        : count !== undefined
                          ? `${count} instance${count === 1 ? '' : 's'}`
                          : ''}
                    </span>
                    {can && p.schedule ? <ActionButton label="Run now" run={() => run.mutate(p.id)} pending={run.isPending} /> : null}
                    {can && !p.schedule && count !== undefined ? (
                      <span className="actions">
                        <button
                          type="button"
                          data-write
                          aria-label={`Scale ${p.key} down`}
                          disabled={count <= 0}
                          onClick={() => scale.mutate({ pid: p.id, count: count - 1 })}
                        >
                          −
                        </button>
                        <button type="button" data-write aria-label={`Scale ${p.key} up`} onClick={() => scale.mutate({ pid: p.id, count: count + 1 })}>
                          +
                        </button>
                      </span>
                    ) : null}
                    {p.schedule ? <CronRuns id={id} processId={p.id} /> : null}
                  </li>
                );
              })}
            </ul>
          ) : (
            <Empty>No processes (they appear after the first deployment).</Empty>
          )
        }
      </Loaded>
    </Section>
  );
}

/** A cron process's runs of the last hour, from its exit-code series (the API's record of runs). */
function CronRuns({ id, processId }: { id: string; processId: string }) {
  const runs = useQuery({
    queryKey: ['cron-runs', id, processId],
    queryFn: () =>
      call(api.GET('/applications/{id}/processes/{process_id}/metrics/exit-codes', { params: { path: { id, process_id: processId }, query: metricWindow() } })),
    refetchInterval: 10_000,
  });
  return (
    <div className="cron-runs" data-cron-runs={processId}>
      <Loaded q={runs} label="runs">
        {(items) =>
          items.length ? (
            <ul className="small">
              {items.slice(-5).map((r) => (
                <li key={r.time}>
                  <When iso={r.time} />: exit {r.value}
                  {r.description ? ` (${r.description})` : ''}
                </li>
              ))}
            </ul>
          ) : (
            <span className="muted small">No runs in the last hour.</span>
          )
        }
      </Loaded>
    </div>
  );
}

function Settings({ id }: { id: string }) {
  const can = useCan('APP:UPDATE', id);
  const app = useQuery({ queryKey: ['applications', id], queryFn: () => call(api.GET('/applications/{id}', { params: { path: { id } } })) });
  const save = useAction(
    (body: Record<string, unknown>) => call(api.PATCH('/applications/{id}', { params: { path: { id } }, body: body as any })),
    [['applications', id]],
  );
  return (
    <Section title="Settings" id="settings">
      <Loaded q={app}>
        {(a) => {
          const git = a.source !== 'dockerImage';
          const fields: TextField[] = [{ key: 'display_name', label: 'Display name', value: a.display_name, required: true }];
          if (!git) fields.push({ key: 'docker_image', label: 'Docker image', value: a.docker_image, required: true });
          else {
            fields.push(
              { key: 'repo_url', label: 'Repository URL', value: a.repo_url, required: true },
              { key: 'default_branch', label: 'Branch', value: a.default_branch, required: true },
              { key: 'build_path', label: 'Build path', value: a.build_path },
            );
            if (a.build_type === 'dockerfile')
              fields.push(
                { key: 'dockerfile_path', label: 'Dockerfile path', value: a.dockerfile_path },
                { key: 'docker_context', label: 'Docker context', value: a.docker_context },
              );
            fields.push(...deployPathFields(a));
          }
          return (
            <SettingsForm
              name="app"
              can={can}
              fields={fields}
              save={(body, done) => save.mutate(body, { onSuccess: done })}
              pending={save.isPending}
              error={save.error}
            >
              {git ? (
                <label className="inline">
                  Build type{' '}
                  <select value={a.build_type ?? ''} disabled={!can} onChange={(e) => save.mutate({ build_type: e.target.value })}>
                    {a.build_type ? null : <option value="">Not set</option>}
                    {BUILD_TYPES.map((t) => (
                      <option key={t.value} value={t.value}>
                        {t.label}
                      </option>
                    ))}
                  </select>
                </label>
              ) : null}
              <label className="inline">
                <input type="checkbox" checked={a.auto_deploy} disabled={!can} onChange={(e) => save.mutate({ auto_deploy: e.target.checked })} /> Deploy on
                every push
              </label>
              <label className="inline">
                <input
                  type="checkbox"
                  checked={a.build_cache_enabled}
                  disabled={!can}
                  onChange={(e) => save.mutate({ build_cache_enabled: e.target.checked })}
                />{' '}
                Build cache
              </label>
            </SettingsForm>
          );
        }}
      </Loaded>
    </Section>
  );
}

const APP_METRICS = [
  { metric: 'requests-per-minute', title: 'Requests per minute', unit: 'count' },
  { metric: 'response-time', title: 'Response time', unit: 'ms' },
] as const;
