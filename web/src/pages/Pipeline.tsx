// A pipeline: its stages in order with their applications (add, remove), promotion of one
// application's current release onto applications of later stages with a preview of what will
// deploy (the source's newest successful deployment: commit, branch, image), stages added and
// removed, and preview apps (enable, settings, disable, create one for a branch). A stage's
// applications are the API's (`app_ids` of GET /pipelines/{id}, x-decided).
import { useState } from 'react';
import { useQueries, useQuery } from '@tanstack/react-query';
import { api, call } from '../api.js';
import { useCan } from '../auth.js';
import { running } from '../Deployments.js';
import { PreviewAppForm } from '../PreviewAppForm.js';
import { statusWords } from '../status.js';
import { Link, navigate } from '../router.js';
import { ActionButton, Badge, Empty, ErrorBox, Loaded, Section, submitWith, useAction, When } from '../ui.js';

type Pipeline = Awaited<ReturnType<typeof getPipeline>>;
type Stage = Pipeline['stages'][number];
const getPipeline = (id: string) => call(api.GET('/pipelines/{id}', { params: { path: { id } } }));

/** The company's applications (names and status badges of the stages' apps), read again while one is busy (a preview app deploying). */
function useApps() {
  return useQuery({
    queryKey: ['applications'],
    queryFn: () => call(api.GET('/applications', { params: { query: { limit: 100 } } })),
    refetchInterval: (q) => ((q.state.data?.data ?? []).some((a) => statusWords(a.status).tone === 'busy') ? 2_000 : 15_000),
  });
}

export function PipelinePage({ id }: { id: string }) {
  const pipeline = useQuery({ queryKey: ['pipelines', id], queryFn: () => getPipeline(id) });
  const can = useCan('PIPELINE:UPDATE', id);
  const canDelete = useCan('PIPELINE:DELETE', id);
  const remove = useAction(
    () => call(api.DELETE('/pipelines/{id}', { params: { path: { id } } })),
    [['pipelines'], ['projects']],
    () => navigate('/'),
  );
  return (
    <main>
      <Loaded q={pipeline} label="pipeline">
        {(p) => {
          const stages = [...p.stages].sort((a, b) => a.order - b.order);
          return (
            <>
              <div className="page-head">
                <h1>{p.display_name}</h1>
                <span className="muted small">{p.type === 'trunk' ? 'Trunk: one branch promoted through the stages' : 'Branch: a branch per stage'}</span>
                <div className="actions">
                  {canDelete ? (
                    <ActionButton
                      label="Delete pipeline"
                      danger
                      run={() => remove.mutate()}
                      pending={remove.isPending}
                      confirm={`Delete ${p.display_name}? Its applications stay; its preview apps are deleted.`}
                    />
                  ) : null}
                </div>
              </div>
              <ErrorBox error={remove.error} />
              <Stages pipeline={p} stages={stages} can={can} />
              <Promote pipeline={p} stages={stages} />
              <Previews pipeline={p} stages={stages} can={can} />
            </>
          );
        }}
      </Loaded>
    </main>
  );
}

function Stages({ pipeline, stages, can }: { pipeline: Pipeline; stages: Stage[]; can: boolean }) {
  const id = pipeline.id;
  const apps = useApps();
  const byId = new Map((apps.data?.data ?? []).map((a) => [a.id, a]));
  const inv = [['pipelines', id]];
  const add = useAction(
    ({ stage, app }: { stage: string; app: string }) =>
      call(api.POST('/pipelines/{id}/stages/{stage_id}/apps', { params: { path: { id, stage_id: stage } }, body: { app_id: app } })),
    [...inv, ['projects']],
  );
  const removeApp = useAction(
    ({ stage, app }: { stage: string; app: string }) =>
      call(api.DELETE('/pipelines/{id}/stages/{stage_id}/apps/{app_id}', { params: { path: { id, stage_id: stage, app_id: app } } })),
    inv,
  );
  const [newStage, setNewStage] = useState('');
  const [branch, setBranch] = useState('');
  const addStage = useAction(
    () =>
      call(
        api.POST('/pipelines/{id}/stages', {
          params: { path: { id } },
          // Before Production, the last stage of a new pipeline.
          body: { display_name: newStage, insert_before: Math.max(0, stages.length - 1), branch: pipeline.type === 'branch' ? branch || null : undefined },
        }),
      ),
    inv,
    () => {
      setNewStage('');
      setBranch('');
    },
  );
  const removeStage = useAction((stage: string) => call(api.DELETE('/pipelines/{id}/stages/{stage_id}', { params: { path: { id, stage_id: stage } } })), inv);
  // An application sits in at most one stage of any pipeline: the API refuses the others.
  const placed = new Set(stages.flatMap((s) => s.app_ids));
  return (
    <Section title="Stages" id="stages">
      <ErrorBox error={add.error ?? removeApp.error ?? removeStage.error} />
      <ol className="stages">
        {stages.map((s) => {
          const here = s.app_ids;
          const free = (apps.data?.data ?? []).filter((a) => !placed.has(a.id) && a.type !== 'previewApp');
          return (
            <li key={s.id} className="card" data-stage={s.display_name}>
              <div className="card-head">
                <h3>
                  {s.display_name} <span className="muted small">{s.type === 'prod' ? 'production' : s.type}</span>
                  {s.branch ? (
                    <span className="small">
                      {' '}
                      · branch <code>{s.branch}</code>
                    </span>
                  ) : null}
                </h3>
                {can && s.type === 'standard' ? (
                  <ActionButton
                    label={`Delete stage ${s.display_name}`}
                    danger
                    run={() => removeStage.mutate(s.id)}
                    confirm={`Delete the stage ${s.display_name}?`}
                  />
                ) : null}
              </div>
              {here.length ? (
                <ul className="rows">
                  {here.map((a) => (
                    <li key={a} className="row" data-stage-app={byId.get(a)?.display_name ?? a}>
                      <Link to={`/apps/${a}`}>{byId.get(a)?.display_name ?? a}</Link>
                      <Badge status={byId.get(a)?.status} />
                      {can && s.type !== 'preview' ? (
                        <ActionButton
                          label={`Remove ${byId.get(a)?.display_name ?? 'application'} from ${s.display_name}`}
                          run={() => removeApp.mutate({ stage: s.id, app: a })}
                        />
                      ) : null}
                    </li>
                  ))}
                </ul>
              ) : (
                <Empty>{s.type === 'preview' ? 'No preview apps yet: create one below.' : 'No applications in this stage.'}</Empty>
              )}
              {can && s.type !== 'preview' ? <AddApp stage={s} free={free} run={(app) => add.mutate({ stage: s.id, app })} pending={add.isPending} /> : null}
            </li>
          );
        })}
      </ol>
      {can ? (
        <form className="inline-form" aria-label="Add stage" onSubmit={submitWith(() => addStage.mutate())}>
          <label>
            New stage <input value={newStage} onChange={(e) => setNewStage(e.target.value)} required placeholder="Staging" />
          </label>
          {pipeline.type === 'branch' ? (
            <label>
              Branch <input value={branch} onChange={(e) => setBranch(e.target.value)} />
            </label>
          ) : null}
          <button type="submit" data-write disabled={addStage.isPending}>
            Add stage before {stages[stages.length - 1]?.display_name ?? 'the last'}
          </button>
          <ErrorBox error={addStage.error} />
        </form>
      ) : null}
    </Section>
  );
}

function AddApp({ stage, free, run, pending }: { stage: Stage; free: { id: string; display_name: string }[]; run: (app: string) => void; pending: boolean }) {
  const [app, setApp] = useState('');
  return (
    <form
      className="inline-form"
      aria-label={`Add application to ${stage.display_name}`}
      onSubmit={submitWith(() => {
        run(app);
        setApp('');
      })}
    >
      <label>
        Application{' '}
        <select value={app} onChange={(e) => setApp(e.target.value)} required>
          <option value="">{free.length ? 'Choose' : 'No application outside a stage'}</option>
          {free.map((a) => (
            <option key={a.id} value={a.id}>
              {a.display_name}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" data-write disabled={pending}>
        Add to {stage.display_name}
      </button>
    </form>
  );
}

function Promote({ pipeline, stages }: { pipeline: Pipeline; stages: Stage[] }) {
  const id = pipeline.id;
  const apps = useApps();
  const canPromote = useCan('PIPELINE:UPDATE', id);
  const names = new Map((apps.data?.data ?? []).map((a) => [a.id, a.display_name]));
  const order = new Map(stages.map((s) => [s.id, s.order]));
  const members = stages.filter((s) => s.type !== 'preview').flatMap((s) => s.app_ids.filter((a) => names.has(a)).map((a) => ({ app: a, stage: s })));
  const [source, setSource] = useState('');
  const [targets, setTargets] = useState<string[]>([]);
  const from = members.find((m) => m.app === source);
  const later = from ? members.filter((m) => order.get(m.stage.id)! > from.stage.order) : [];
  const release = useQuery({
    queryKey: ['app-deployments', source],
    enabled: !!source,
    queryFn: () => call(api.GET('/applications/{id}/deployments', { params: { path: { id: source }, query: { limit: 50 } } })),
  });
  const current = release.data?.data.find((d) => d.status === 'success');
  const [started, setStarted] = useState<{ target_app_id: string; deployment_id: string }[]>([]);
  const promote = useAction(
    () => call(api.POST('/pipelines/{id}/promote', { params: { path: { id } }, body: { source_app_id: source, target_app_ids: targets } })),
    [['applications']],
    (r) => {
      setStarted(r);
      setTargets([]);
    },
  );
  if (!canPromote) return null;
  return (
    <Section title="Promote" id="promote">
      {members.length < 2 ? (
        <Empty>Place applications in two stages to promote one's release onto the other.</Empty>
      ) : (
        <form className="settings" aria-label="Promote" onSubmit={submitWith(() => promote.mutate())}>
          <label htmlFor="promote-source">From</label>
          <select
            id="promote-source"
            value={source}
            onChange={(e) => {
              setSource(e.target.value);
              setTargets([]);
            }}
            required
          >
            <option value="">Choose the application to promote</option>
            {members.map((m) => (
              <option key={m.app} value={m.app}>
                {names.get(m.app)} ({m.stage.display_name})
              </option>
            ))}
          </select>
          {source ? (
            <fieldset>
              <legend>Onto</legend>
              {later.length ? (
                later.map((m) => (
                  <label key={m.app} className="inline">
                    <input
                      type="checkbox"
                      checked={targets.includes(m.app)}
                      onChange={(e) => setTargets(e.target.checked ? [...targets, m.app] : targets.filter((t) => t !== m.app))}
                    />{' '}
                    {names.get(m.app)} ({m.stage.display_name})
                  </label>
                ))
              ) : (
                <Empty>No application in a later stage.</Empty>
              )}
            </fieldset>
          ) : null}
          {source ? (
            <div data-promote-preview aria-live="polite">
              <Loaded q={release} label="the release to promote">
                {() =>
                  current ? (
                    <p>
                      Will deploy the release of {names.get(source)} deployed <When iso={current.finished_at ?? current.created_at} />:{' '}
                      {current.commit_sha ? (
                        <>
                          commit <code data-promote-commit>{current.commit_sha.slice(0, 7)}</code>
                          {current.commit_message ? ` “${current.commit_message.split('\n')[0]}”` : ''}
                          {current.branch ? (
                            <>
                              {' '}
                              on <code>{current.branch}</code>
                            </>
                          ) : null}
                        </>
                      ) : (
                        <>
                          image <code>{current.docker_image_url ?? 'unknown'}</code>
                        </>
                      )}
                      , with each target's own variables and settings (no new build).
                    </p>
                  ) : (
                    <Empty>{names.get(source)} has no successful deployment to promote.</Empty>
                  )
                }
              </Loaded>
            </div>
          ) : null}
          <button type="submit" className="primary" data-write disabled={promote.isPending || !current || !targets.length}>
            Promote
          </button>
          <ErrorBox error={promote.error} />
        </form>
      )}
      {started.length ? <Promoted started={started} names={names} /> : null}
    </Section>
  );
}

/** The deployments a promotion started, followed until they finish. */
function Promoted({ started, names }: { started: { target_app_id: string; deployment_id: string }[]; names: Map<string, string> }) {
  const deps = useQueries({
    queries: started.map((s) => ({
      queryKey: ['deployment', s.deployment_id],
      queryFn: () =>
        call(api.GET('/applications/{id}/deployments/{deployment_id}', { params: { path: { id: s.target_app_id, deployment_id: s.deployment_id } } })),
      refetchInterval: (q: { state: { data?: { status: string | null } } }) => (q.state.data && !running(q.state.data.status) ? false : 1_500),
    })),
  });
  return (
    <ul className="rows" aria-label="Promotions">
      {started.map((s, i) => (
        <li key={s.deployment_id} className="row" data-promoted={names.get(s.target_app_id) ?? s.target_app_id}>
          <Link to={`/apps/${s.target_app_id}`}>{names.get(s.target_app_id) ?? s.target_app_id}</Link>
          <Badge status={deps[i]?.data?.status ?? 'waiting'} />
        </li>
      ))}
    </ul>
  );
}

/** The API's stale_app_days when enabling preview apps without one. */
const STALE_DAYS = 5;

function Previews({ pipeline, stages, can }: { pipeline: Pipeline; stages: Stage[]; can: boolean }) {
  const id = pipeline.id;
  const preview = stages.find((s) => s.type === 'preview');
  const inv = [['pipelines', id]];
  const [repo, setRepo] = useState('');
  const [autoCreate, setAutoCreate] = useState<boolean | null>(null);
  const [stale, setStale] = useState<boolean | null>(null);
  const [days, setDays] = useState<string | null>(null);
  const body = () => ({
    repo_url: repo || undefined,
    auto_create_app: autoCreate ?? preview?.auto_create_app ?? false,
    delete_stale_apps: stale ?? preview?.delete_stale_apps ?? false,
    stale_app_days: Number(days ?? preview?.stale_app_days ?? STALE_DAYS),
  });
  const reset = () => {
    setRepo('');
    setAutoCreate(null);
    setStale(null);
    setDays(null);
  };
  const save = useAction(
    () =>
      preview
        ? call(api.PUT('/pipelines/{id}/preview', { params: { path: { id } }, body: body() }))
        : call(api.POST('/pipelines/{id}/preview/enable', { params: { path: { id } }, body: body() })),
    inv,
    reset,
  );
  const disable = useAction(() => call(api.POST('/pipelines/{id}/preview/disable', { params: { path: { id } } })), [...inv, ['applications']]);
  return (
    <Section title="Preview apps" id="previews">
      <p data-previews={preview ? 'on' : 'off'}>
        {preview
          ? 'On: an application of this pipeline can get a preview app per branch (below, or on its application page).'
          : 'Off: turn them on with the repository the preview apps build from.'}
      </p>
      {can ? (
        <form className="settings grid-form" aria-label="Preview app settings" onSubmit={submitWith(() => save.mutate())}>
          <div className="wide">
            <label htmlFor="preview-repo">Repository URL{preview ? ' (leave empty to keep)' : ''}</label>
            <input id="preview-repo" type="url" value={repo} onChange={(e) => setRepo(e.target.value)} placeholder="https://github.com/you/app" />
          </div>
          <label className="inline">
            <input type="checkbox" checked={autoCreate ?? preview?.auto_create_app ?? false} onChange={(e) => setAutoCreate(e.target.checked)} /> Create a
            preview app for every pull request
          </label>
          <label className="inline">
            <input type="checkbox" checked={stale ?? preview?.delete_stale_apps ?? false} onChange={(e) => setStale(e.target.checked)} /> Delete preview apps
            not deployed for
          </label>
          <div>
            <label htmlFor="preview-days">Days before a preview app is stale</label>
            <input
              id="preview-days"
              type="number"
              min={1}
              value={days ?? String(preview?.stale_app_days ?? STALE_DAYS)}
              onChange={(e) => setDays(e.target.value)}
            />
          </div>
          <div className="wide">
            <button type="submit" data-write disabled={save.isPending}>
              {preview ? 'Save preview settings' : 'Turn preview apps on'}
            </button>{' '}
            {preview ? (
              <ActionButton
                label="Turn preview apps off"
                danger
                run={() => disable.mutate()}
                pending={disable.isPending}
                confirm="Turn preview apps off? Every preview app of this pipeline is deleted."
              />
            ) : null}
          </div>
          <ErrorBox error={save.error ?? disable.error} />
        </form>
      ) : null}
      {preview ? <NewPreviewApp pipeline={pipeline} stages={stages} /> : null}
    </Section>
  );
}

/** A preview app of one of the pipeline's applications, for a branch (and pull request). */
function NewPreviewApp({ pipeline, stages }: { pipeline: Pipeline; stages: Stage[] }) {
  const canCreate = useCan('APP:CREATE');
  const apps = useApps();
  const names = new Map((apps.data?.data ?? []).map((a) => [a.id, a.display_name]));
  const sources = stages.filter((s) => s.type !== 'preview').flatMap((s) => s.app_ids.filter((a) => names.has(a)).map((a) => ({ app: a, stage: s })));
  const [source, setSource] = useState('');
  if (!canCreate) return null;
  return (
    <PreviewAppForm appId={source} invalidate={[['pipelines', pipeline.id], ['applications']]}>
      <label>
        From{' '}
        <select value={source} onChange={(e) => setSource(e.target.value)} required>
          <option value="">{sources.length ? 'Choose an application' : 'No application in a stage'}</option>
          {sources.map((m) => (
            <option key={m.app} value={m.app}>
              {names.get(m.app)} ({m.stage.display_name})
            </option>
          ))}
        </select>
      </label>
    </PreviewAppForm>
  );
}
