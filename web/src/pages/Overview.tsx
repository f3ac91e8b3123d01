// The company's services by project: each kind's list, with each item's project read from its
// detail (the list items of the contract do not carry project_id), and a status badge.
import { useState, type FormEvent } from 'react';
import { useQueries, useQuery } from '@tanstack/react-query';
import { api, call } from '../api.js';
import { useCan } from '../auth.js';
import { Link, navigate } from '../router.js';
import { Badge, Empty, ErrorBox, Loaded, Section, useAction } from '../ui.js';

interface Kind {
  key: string;
  label: string;
  path: string;
  permission: string;
  link?: (id: string) => string;
}

const KINDS: Kind[] = [
  { key: 'applications', label: 'Applications', path: '/applications', permission: 'APP:READ', link: (id) => `/apps/${id}` },
  { key: 'databases', label: 'Databases', path: '/databases', permission: 'DATABASE:READ', link: (id) => `/databases/${id}` },
  { key: 'static-sites', label: 'Static sites', path: '/static-sites', permission: 'STATIC_SITE:READ' },
  { key: 'object-storage', label: 'Buckets', path: '/object-storage', permission: 'OBJECT_STORAGE:READ' },
  { key: 'load-balancers', label: 'Load balancers', path: '/load-balancers', permission: 'LOAD_BALANCER:READ' },
  { key: 'pipelines', label: 'Pipelines', path: '/pipelines', permission: 'PIPELINE:READ' },
];

interface Item {
  id: string;
  display_name?: string;
  name?: string;
  status?: string | null;
  is_suspended?: boolean;
  project_id?: string | null;
}

// The list and detail paths vary by kind; the generated types cover each, this view treats them alike.
const get = (path: string, query?: Record<string, unknown>) => call<any>((api.GET as any)(path, { params: { query } }));

function useKind(kind: Kind) {
  const list = useQuery({ queryKey: [kind.key], queryFn: () => get(kind.path, { limit: 100 }), refetchInterval: 5_000 });
  const items: Item[] = list.data?.data ?? [];
  const details = useQueries({
    queries: items.map((it) => ({
      queryKey: [kind.key, it.id, 'project'],
      queryFn: () => get(`${kind.path}/${it.id}`) as Promise<Item>,
      staleTime: 60_000,
    })),
  });
  // Only the project comes from the detail; the status is the list's, which is polled.
  return { list, items: items.map((it, i) => ({ ...it, project_id: details[i]?.data?.project_id ?? it.project_id })) };
}

export function Overview() {
  const projects = useQuery({ queryKey: ['projects'], queryFn: () => call(api.GET('/projects', { params: { query: { limit: 100 } } })) });
  const kinds = KINDS.map((k) => ({ kind: k, ...useKind(k) }));
  const names = new Map((projects.data?.data ?? []).map((p) => [p.id, p.display_name]));
  const groups = new Map<string, { kind: Kind; item: Item }[]>();
  for (const { kind, items } of kinds)
    for (const item of items) {
      const key = item.project_id ?? '';
      groups.set(key, [...(groups.get(key) ?? []), { kind, item }]);
    }
  const order = [...(projects.data?.data ?? []).map((p) => p.id), ''];
  const loading = kinds.some((k) => k.list.isPending) || projects.isPending;
  const errors = kinds.filter((k) => k.list.isError);
  return (
    <main>
      <div className="page-head">
        <h1>Overview</h1>
      </div>
      <NewApplication />
      {errors.map((k) => (
        <div key={k.kind.key}>
          <h3 className="sr-only">{k.kind.label}</h3>
          <ErrorBox error={k.list.error} />
        </div>
      ))}
      {loading ? <p className="loading">Loading services…</p> : null}
      {!loading && groups.size === 0 ? <Empty>No services yet. Create an application to start.</Empty> : null}
      {order
        .filter((p) => groups.has(p))
        .map((p) => (
          <Section key={p || 'none'} title={p ? (names.get(p) ?? 'Project') : 'Not in a project'} id={`project-${p || 'none'}`}>
            {KINDS.filter((k) => groups.get(p)!.some((g) => g.kind === k)).map((k) => (
              <div key={k.key} className="kind">
                <h3>{k.label}</h3>
                <ul className="rows">
                  {groups
                    .get(p)!
                    .filter((g) => g.kind === k)
                    .map(({ item }) => (
                      <li key={item.id} className="row" data-kind={k.key}>
                        {k.link ? <Link to={k.link(item.id)}>{item.display_name ?? item.name}</Link> : <span>{item.display_name ?? item.name}</span>}
                        <span className="muted small">{item.name}</span>
                        <Badge status={item.is_suspended ? 'suspended' : (item.status ?? undefined)} />
                      </li>
                    ))}
                </ul>
              </div>
            ))}
          </Section>
        ))}
      <Projects list={projects} />
    </main>
  );
}

function Projects({ list }: { list: ReturnType<typeof useQuery<any>> }) {
  return (
    <Section title="Projects" id="projects">
      <Loaded q={list}>{(d: any) => (d.data.length ? <p>{d.data.map((p: any) => p.display_name).join(' · ')}</p> : <Empty>No projects.</Empty>)}</Loaded>
    </Section>
  );
}

function NewApplication() {
  const can = useCan('APP:CREATE');
  const canDb = useCan('DATABASE:CREATE');
  const clusters = useQuery({ queryKey: ['clusters'], queryFn: () => call(api.GET('/resources/clusters')), enabled: can || canDb, staleTime: Infinity });
  const dbTypes = useQuery({
    queryKey: ['db-resource-types'],
    queryFn: () => call(api.GET('/resources/database-resource-types')),
    enabled: canDb,
    staleTime: Infinity,
  });
  const [name, setName] = useState('');
  const [image, setImage] = useState('nginx:1.27');
  const [dbName, setDbName] = useState('');
  const cluster = clusters.data?.[0]?.id;
  const createApp = useAction(
    () =>
      call(
        api.POST('/applications', {
          body: { display_name: name, cluster_id: cluster!, source: 'dockerImage', docker_image: image },
        }),
      ),
    [['applications']],
    (a) => navigate(`/apps/${a.id}`),
  );
  const rt = dbTypes.data?.[0]?.id;
  const createDb = useAction(
    () =>
      call(
        api.POST('/databases', {
          body: {
            display_name: dbName,
            type: 'postgresql',
            version: '17',
            cluster_id: cluster!,
            resource_type_id: rt!,
            db_name: 'appdata',
            db_password: randomPassword(),
          },
        }),
      ),
    [['databases']],
    (d) => navigate(`/databases/${d.id}`),
  );
  if (!can && !canDb) return null;
  const submitApp = (e: FormEvent) => {
    e.preventDefault();
    createApp.mutate();
  };
  const submitDb = (e: FormEvent) => {
    e.preventDefault();
    createDb.mutate();
  };
  return (
    <div className="grid2">
      {can ? (
        <form className="card" onSubmit={submitApp} aria-label="New application">
          <h2>New application</h2>
          <label htmlFor="app-name">Name</label>
          <input id="app-name" value={name} onChange={(e) => setName(e.target.value)} required />
          <label htmlFor="app-image">Docker image</label>
          <input id="app-image" value={image} onChange={(e) => setImage(e.target.value)} required />
          <button type="submit" className="primary" data-write disabled={createApp.isPending || !cluster}>
            Create application
          </button>
          <ErrorBox error={createApp.error} />
        </form>
      ) : null}
      {canDb ? (
        <form className="card" onSubmit={submitDb} aria-label="New database">
          <h2>New PostgreSQL database</h2>
          <label htmlFor="db-name">Name</label>
          <input id="db-name" value={dbName} onChange={(e) => setDbName(e.target.value)} required />
          <p className="hint">A random password is set; reset it on the database page to choose one.</p>
          <button type="submit" className="primary" data-write disabled={createDb.isPending || !cluster || !rt}>
            Create database
          </button>
          <ErrorBox error={createDb.error} />
        </form>
      ) : null}
    </div>
  );
}

export function randomPassword() {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return `Pw_${Array.from(bytes, (b) => b.toString(36).padStart(2, '0')).join('')}`.slice(0, 28);
}
