// Company settings: projects (create, rename, delete), global environment variables (given to every
// application), usage alerts (a monthly limit in USD, thresholds in percent, emails, optionally
// for one project), registry credentials (the secret is write-only) and links to webhooks and keys.
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from '../api.js';
import { useCan } from '../auth.js';
import { EnvVars } from '../EnvVars.js';
import { formatValue } from '../format.js';
import { ProjectPicker, useProjects } from '../projects.js';
import { Link } from '../router.js';
import { ActionButton, ErrorBox, Rows, Section, useAction, When, submitWith } from '../ui.js';

export function SettingsPage() {
  return (
    <main>
      <div className="page-head">
        <h1>Company settings</h1>
      </div>
      <Projects />
      <EnvVars base="/applications/global-env-vars" can={useCan('APP:UPDATE')} title="Global environment variables" />
      <UsageAlerts />
      <Registries />
      <Section title="Integrations and access" id="more">
        <ul>
          <li>
            <Link to="/webhooks">Webhooks</Link>: endpoints that receive the company's events, and their deliveries.
          </li>
          <li>
            <Link to="/api-keys">API keys</Link>: keys with their roles and scoped capabilities.
          </li>
        </ul>
      </Section>
    </main>
  );
}

function Projects() {
  const can = { create: useCan('PROJECT:CREATE'), update: useCan('PROJECT:UPDATE'), remove: useCan('PROJECT:DELETE') };
  const list = useProjects();
  const [name, setName] = useState('');
  const [renaming, setRenaming] = useState<{ id: string; name: string } | null>(null);
  const inv = [['projects']];
  const create = useAction(
    () => call(api.POST('/projects', { body: { display_name: name } })),
    inv,
    () => setName(''),
  );
  const rename = useAction(
    (r: { id: string; name: string }) => call(api.PATCH('/projects/{id}', { params: { path: { id: r.id } }, body: { display_name: r.name } })),
    inv,
    () => setRenaming(null),
  );
  const remove = useAction((id: string) => call(api.DELETE('/projects/{id}', { params: { path: { id } } })), inv);
  const submit = submitWith(() => create.mutate());
  return (
    <Section title="Projects" id="projects">
      <ErrorBox error={create.error ?? rename.error ?? remove.error} />
      <Rows q={list} label="projects" empty="No projects yet.">
        {(p) => (
          <li key={p.id} className="row" data-project={p.display_name}>
            {renaming?.id === p.id ? (
              <form
                className="inline-form tight"
                aria-label={`Rename ${p.display_name}`}
                onSubmit={(e) => {
                  e.preventDefault();
                  rename.mutate(renaming);
                }}
              >
                <label>
                  New name <input value={renaming.name} onChange={(e) => setRenaming({ id: p.id, name: e.target.value })} required autoFocus />
                </label>
                <button type="submit" data-write disabled={rename.isPending}>
                  Save
                </button>
                <button type="button" onClick={() => setRenaming(null)}>
                  Cancel
                </button>
              </form>
            ) : (
              <strong>{p.display_name}</strong>
            )}
            <span className="muted small">
              {p.name} · created <When iso={p.created_at} />
            </span>
            <span className="actions">
              {can.update && renaming?.id !== p.id ? <ActionButton label="Rename" run={() => setRenaming({ id: p.id, name: p.display_name })} /> : null}
              {can.remove ? (
                <ActionButton label="Delete" danger run={() => remove.mutate(p.id)} confirm={`Delete the project ${p.display_name}? Its services stay.`} />
              ) : null}
            </span>
          </li>
        )}
      </Rows>
      {can.create ? (
        <form className="inline-form" onSubmit={submit} aria-label="New project">
          <label>
            Project name <input value={name} onChange={(e) => setName(e.target.value)} required />
          </label>
          <button type="submit" data-write disabled={create.isPending}>
            Create project
          </button>
        </form>
      ) : null}
    </Section>
  );
}

const numbers = (v: string) =>
  v
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number);

function UsageAlerts() {
  const can = { create: useCan('BILLING:CREATE'), remove: useCan('BILLING:DELETE') };
  const projects = useProjects();
  const names = new Map((projects.data?.data ?? []).map((p) => [p.id, p.display_name]));
  const list = useQuery({ queryKey: ['usage-alerts'], queryFn: () => call(api.GET('/usage-alerts', { params: { query: { limit: 100 } } })) });
  const [limit, setLimit] = useState('100');
  const [thresholds, setThresholds] = useState('50, 80, 100');
  const [emails, setEmails] = useState('');
  const [project, setProject] = useState('');
  const inv = [['usage-alerts']];
  const create = useAction(
    () =>
      call(
        api.POST('/usage-alerts', {
          body: {
            limit_usd: Number(limit),
            triggers: numbers(thresholds).map((percentage) => ({ percentage })),
            emails: emails
              .split(/[\s,]+/)
              .map((e) => e.trim())
              .filter(Boolean),
            project_id: project || null,
          },
        }),
      ),
    inv,
    () => setEmails(''),
  );
  const remove = useAction((id: string) => call(api.DELETE('/usage-alerts/{id}', { params: { path: { id } } })), inv);
  const submit = submitWith(() => create.mutate());
  return (
    <Section title="Usage alerts" id="usage-alerts">
      <p className="hint">An email goes out when the month's usage reaches each threshold of the limit.</p>
      <ErrorBox error={create.error ?? remove.error} />
      <Rows q={list} label="usage alerts" empty="No usage alerts.">
        {(a) => (
          <li key={a.id} className="row" data-alert={a.id}>
            <strong>{formatValue(a.limit_usd, 'usd')} a month</strong>
            <span>{a.project_id ? `project ${names.get(a.project_id) ?? a.project_id}` : 'whole company'}</span>
            <span data-thresholds>
              at{' '}
              {a.triggers
                .map((t) => t.percentage)
                .sort((x, y) => x - y)
                .map((p) => `${p}%`)
                .join(', ')}
            </span>
            <span className="muted small">{a.emails.join(', ')}</span>
            {can.remove ? <ActionButton label="Delete" danger run={() => remove.mutate(a.id)} confirm="Delete this usage alert?" /> : null}
          </li>
        )}
      </Rows>
      {can.create ? (
        <form className="grid-form" onSubmit={submit} aria-label="New usage alert">
          <div>
            <label htmlFor="alert-limit">Monthly limit (USD)</label>
            <input id="alert-limit" type="number" min="1" step="any" value={limit} onChange={(e) => setLimit(e.target.value)} required />
          </div>
          <div>
            <label htmlFor="alert-thresholds">Thresholds (% of the limit, comma separated)</label>
            <input id="alert-thresholds" value={thresholds} onChange={(e) => setThresholds(e.target.value)} required pattern="\s*\d+(\s*[, ]\s*\d+)*\s*" />
          </div>
          <div>
            <label htmlFor="alert-emails">Emails (comma separated)</label>
            <input id="alert-emails" value={emails} onChange={(e) => setEmails(e.target.value)} required placeholder="ops@example.com" />
          </div>
          <div>
            <ProjectPicker id="alert-project" value={project} onChange={setProject} />
          </div>
          <div className="wide">
            <button type="submit" data-write disabled={create.isPending}>
              Create alert
            </button>
          </div>
        </form>
      ) : null}
    </Section>
  );
}

const REGISTRIES = [
  ['dockerHub', 'Docker Hub'],
  ['github', 'GitHub Container Registry'],
  ['gitlab', 'GitLab Container Registry'],
  ['gcr', 'Google Container Registry'],
  ['ecr', 'Amazon ECR'],
  ['digitalOcean', 'DigitalOcean'],
  ['custom', 'Other registry'],
] as const;
type Registry = (typeof REGISTRIES)[number][0];

function Registries() {
  const can = { read: useCan('REGISTRY_CREDENTIAL:READ'), create: useCan('REGISTRY_CREDENTIAL:CREATE'), remove: useCan('REGISTRY_CREDENTIAL:DELETE') };
  const list = useQuery({
    queryKey: ['docker-registries'],
    queryFn: () => call(api.GET('/docker-registries', { params: { query: { limit: 100 } } })),
    enabled: can.read,
  });
  const [form, setForm] = useState({ name: '', registry: 'dockerHub' as Registry, username: '', secret: '' });
  const inv = [['docker-registries']];
  const create = useAction(
    () => call(api.POST('/docker-registries', { body: form })),
    inv,
    () => setForm({ ...form, name: '', username: '', secret: '' }),
  );
  const remove = useAction((id: string) => call(api.DELETE('/docker-registries/{id}', { params: { path: { id } } })), inv);
  const submit = submitWith(() => create.mutate());
  const label = new Map<string, string>(REGISTRIES);
  if (!can.read) return null;
  return (
    <Section title="Registry credentials" id="registries">
      <p className="hint">For applications deployed from a private image. The secret is stored and never shown again.</p>
      <ErrorBox error={create.error ?? remove.error} />
      <Rows q={list} label="registry credentials" empty="No registry credentials.">
        {(r) => (
          <li key={r.id} className="row" data-registry={r.name}>
            <strong>{r.name}</strong>
            <span>{label.get(r.registry) ?? r.registry}</span>
            <span className="muted small">user {r.username}</span>
            {can.remove ? <ActionButton label="Delete" danger run={() => remove.mutate(r.id)} confirm={`Delete the credentials ${r.name}?`} /> : null}
          </li>
        )}
      </Rows>
      {can.create ? (
        <form className="grid-form" onSubmit={submit} aria-label="New registry credentials">
          <div>
            <label htmlFor="reg-name">Name</label>
            <input id="reg-name" value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} required />
          </div>
          <div>
            <label htmlFor="reg-registry">Registry</label>
            <select id="reg-registry" value={form.registry} onChange={(e) => setForm({ ...form, registry: e.target.value as Registry })}>
              {REGISTRIES.map(([v, l]) => (
                <option key={v} value={v}>
                  {l}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label htmlFor="reg-user">Username</label>
            <input id="reg-user" value={form.username} onChange={(e) => setForm({ ...form, username: e.target.value })} required autoComplete="off" />
          </div>
          <div>
            <label htmlFor="reg-secret">Password or token</label>
            <input
              id="reg-secret"
              type="password"
              value={form.secret}
              onChange={(e) => setForm({ ...form, secret: e.target.value })}
              required
              autoComplete="new-password"
            />
          </div>
          <div className="wide">
            <button type="submit" data-write disabled={create.isPending}>
              Add credentials
            </button>
          </div>
        </form>
      ) : null}
    </Section>
  );
}
