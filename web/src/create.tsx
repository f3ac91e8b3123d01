// The create form of each kind of service, all with a name and a project picker; each opens the
// new service's page when the API has created it.
import { useState, type ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from './api.js';
import { useCan } from './auth.js';
import { navigate } from './router.js';
import { rememberSecret } from './bucket-secrets.js';
import { ProjectPicker } from './projects.js';
import { ErrorBox, submitWith, useAction } from './ui.js';

/** The card every create form shares: its title, the name and project fields, submit and error. */
function CreateForm(props: {
  what: string;
  name: string;
  setName: (v: string) => void;
  project: string;
  setProject: (v: string) => void;
  projectRequired?: boolean;
  run: () => void;
  pending: boolean;
  error: unknown;
  ready?: boolean;
  children?: ReactNode;
}) {
  const id = props.what.replace(/\W+/g, '-');
  const submit = submitWith(props.run);
  return (
    <form className="card create" onSubmit={submit} aria-label={`New ${props.what}`} data-create={id}>
      <h2>New {props.what}</h2>
      <label htmlFor={`${id}-name`}>Name</label>
      <input id={`${id}-name`} value={props.name} onChange={(e) => props.setName(e.target.value)} required minLength={2} autoFocus />
      <ProjectPicker id={`${id}-project`} value={props.project} onChange={props.setProject} required={props.projectRequired} />
      {props.children}
      <button type="submit" className="primary" data-write disabled={props.pending || props.ready === false}>
        Create {props.what}
      </button>
      <ErrorBox error={props.error} />
    </form>
  );
}

/** The name and project state of a form, the project starting at the one chosen in the menu. */
function useBasics(initialProject: string) {
  const [name, setName] = useState('');
  const [project, setProject] = useState(initialProject);
  return { name, setName, project, setProject, projectId: project || undefined };
}

function useClusters() {
  return useQuery({ queryKey: ['clusters'], queryFn: () => call(api.GET('/resources/clusters')), staleTime: Infinity });
}

export const BUILD_TYPES = [
  { value: 'dockerfile', label: 'Dockerfile' },
  { value: 'nixpacks', label: 'Nixpacks' },
  { value: 'railpack', label: 'Railpack' },
  { value: 'pack', label: 'Cloud Native Buildpacks' },
] as const;

export function NewApplication({ project }: { project: string }) {
  const b = useBasics(project);
  const clusters = useClusters();
  const canRegistries = useCan('REGISTRY_CREDENTIAL:READ');
  const registries = useQuery({
    queryKey: ['docker-registries'],
    queryFn: () => call(api.GET('/docker-registries', { params: { query: { limit: 100 } } })),
    enabled: canRegistries,
  });
  const [from, setFrom] = useState<'git' | 'image'>('git');
  const [repo, setRepo] = useState('');
  const [branch, setBranch] = useState('main');
  const [privateRepo, setPrivateRepo] = useState(false);
  const [gitType, setGitType] = useState<'github' | 'gitlab' | 'bitbucket'>('github');
  const [buildType, setBuildType] = useState<(typeof BUILD_TYPES)[number]['value']>('dockerfile');
  const [dockerfile, setDockerfile] = useState('Dockerfile');
  const [image, setImage] = useState('nginx:1.27');
  const [credential, setCredential] = useState('');
  const cluster = clusters.data?.[0]?.id;
  const create = useAction(
    async () => {
      const common = { display_name: b.name, cluster_id: cluster!, project_id: b.projectId };
      if (from === 'image')
        return call(
          api.POST('/applications', {
            body: { ...common, source: 'dockerImage', docker_image: image, docker_registry_credential_id: credential || undefined },
          }),
        );
      const app = await call(
        api.POST('/applications', {
          body: { ...common, source: privateRepo ? 'privateGit' : 'publicGit', git_type: gitType, repo_url: repo, default_branch: branch },
        }),
      );
      // How it is built is a setting of the application, not part of its creation.
      await call(
        api.PATCH('/applications/{id}', {
          params: { path: { id: app.id } },
          body: buildType === 'dockerfile' ? { build_type: buildType, dockerfile_path: dockerfile } : { build_type: buildType },
        }),
      );
      return app;
    },
    [['applications'], ['projects']],
    (a) => navigate(`/apps/${a.id}`),
  );
  return (
    <CreateForm what="application" {...b} run={() => create.mutate()} pending={create.isPending} error={create.error} ready={!!cluster}>
      <fieldset>
        <legend>Source</legend>
        <label className="inline">
          <input type="radio" name="app-source" checked={from === 'git'} onChange={() => setFrom('git')} /> Git repository
        </label>
        <label className="inline">
          <input type="radio" name="app-source" checked={from === 'image'} onChange={() => setFrom('image')} /> Docker image
        </label>
      </fieldset>
      {from === 'git' ? (
        <>
          <label htmlFor="app-repo">Repository URL</label>
          <input id="app-repo" type="url" value={repo} onChange={(e) => setRepo(e.target.value)} required placeholder="https://github.com/you/app" />
          <label htmlFor="app-branch">Branch</label>
          <input id="app-branch" value={branch} onChange={(e) => setBranch(e.target.value)} required />
          <label htmlFor="app-git-type">Git provider</label>
          <select id="app-git-type" value={gitType} onChange={(e) => setGitType(e.target.value as typeof gitType)}>
            <option value="github">GitHub</option>
            <option value="gitlab">GitLab</option>
            <option value="bitbucket">Bitbucket</option>
          </select>
          <label className="inline">
            <input type="checkbox" checked={privateRepo} onChange={(e) => setPrivateRepo(e.target.checked)} /> Private repository (through the provider's app)
          </label>
          <label htmlFor="app-build-type">Build type</label>
          <select id="app-build-type" value={buildType} onChange={(e) => setBuildType(e.target.value as typeof buildType)}>
            {BUILD_TYPES.map((t) => (
              <option key={t.value} value={t.value}>
                {t.label}
              </option>
            ))}
          </select>
          {buildType === 'dockerfile' ? (
            <>
              <label htmlFor="app-dockerfile">Dockerfile path</label>
              <input id="app-dockerfile" value={dockerfile} onChange={(e) => setDockerfile(e.target.value)} required />
            </>
          ) : null}
        </>
      ) : (
        <>
          <label htmlFor="app-image">Docker image</label>
          <input id="app-image" value={image} onChange={(e) => setImage(e.target.value)} required />
          {registries.data?.data.length ? (
            <>
              <label htmlFor="app-registry">Registry credentials</label>
              <select id="app-registry" value={credential} onChange={(e) => setCredential(e.target.value)}>
                <option value="">None (public image)</option>
                {registries.data.data.map((r) => (
                  <option key={r.id} value={r.id}>
                    {r.name}
                  </option>
                ))}
              </select>
            </>
          ) : null}
        </>
      )}
    </CreateForm>
  );
}

// The engines and versions the API accepts on create (the contract does not enumerate them; a
// version the server refuses is shown as its 400).
const ENGINES = [
  { type: 'postgresql', label: 'PostgreSQL', versions: ['17', '16', '15', '14', '13'] },
  { type: 'mysql', label: 'MySQL', versions: ['9', '8.4', '8.0'] },
  { type: 'mariadb', label: 'MariaDB', versions: ['11.4', '10.11', '10.6'] },
  { type: 'redis', label: 'Redis', versions: ['7.2', '7'] },
  { type: 'valkey', label: 'Valkey', versions: ['8', '7.2'] },
] as const;

export function NewDatabase({ project }: { project: string }) {
  const b = useBasics(project);
  const [engine, setEngine] = useState<(typeof ENGINES)[number]>(ENGINES[0]);
  const [version, setVersion] = useState<string>(ENGINES[0].versions[0]);
  const clusters = useClusters();
  const types = useQuery({ queryKey: ['db-resource-types'], queryFn: () => call(api.GET('/resources/database-resource-types')), staleTime: Infinity });
  const cluster = clusters.data?.[0]?.id;
  const rt = types.data?.[0]?.id;
  const create = useAction(
    () =>
      call(
        api.POST('/databases', {
          body: {
            display_name: b.name,
            type: engine.type,
            version,
            cluster_id: cluster!,
            resource_type_id: rt!,
            db_name: 'appdata',
            db_password: randomPassword(),
            project_id: b.projectId,
          },
        }),
      ),
    [['databases'], ['projects']],
    (d) => navigate(`/databases/${d.id}`),
  );
  return (
    <CreateForm what="database" {...b} run={() => create.mutate()} pending={create.isPending} error={create.error} ready={!!cluster && !!rt}>
      <label htmlFor="db-engine">Engine</label>
      <select
        id="db-engine"
        value={engine.type}
        onChange={(e) => {
          const next = ENGINES.find((x) => x.type === e.target.value)!;
          setEngine(next);
          setVersion(next.versions[0]);
        }}
      >
        {ENGINES.map((x) => (
          <option key={x.type} value={x.type}>
            {x.label}
          </option>
        ))}
      </select>
      <label htmlFor="db-version">Version</label>
      <select id="db-version" value={version} onChange={(e) => setVersion(e.target.value)}>
        {engine.versions.map((v) => (
          <option key={v}>{v}</option>
        ))}
      </select>
      <p className="hint">A random password is set; reset it on the database page to see or choose one.</p>
    </CreateForm>
  );
}

export function NewStaticSite({ project }: { project: string }) {
  const b = useBasics(project);
  const [repo, setRepo] = useState('');
  const [branch, setBranch] = useState('main');
  const [build, setBuild] = useState('npm run build');
  const [dir, setDir] = useState('dist');
  const create = useAction(
    () =>
      call(
        api.POST('/static-sites', {
          body: {
            display_name: b.name,
            repo_url: repo,
            default_branch: branch,
            source: 'publicGit',
            build_command: build || undefined,
            published_directory: dir || undefined,
            project_id: b.projectId,
          },
        }),
      ),
    [['static-sites'], ['projects']],
    (s) => navigate(`/static-sites/${s.id}`),
  );
  return (
    <CreateForm what="static site" {...b} run={() => create.mutate()} pending={create.isPending} error={create.error}>
      <label htmlFor="site-repo">Repository URL</label>
      <input id="site-repo" type="url" value={repo} onChange={(e) => setRepo(e.target.value)} required placeholder="https://github.com/you/site" />
      <label htmlFor="site-branch">Production branch</label>
      <input id="site-branch" value={branch} onChange={(e) => setBranch(e.target.value)} required />
      <label htmlFor="site-build">Build command</label>
      <input id="site-build" value={build} onChange={(e) => setBuild(e.target.value)} />
      <label htmlFor="site-dir">Published directory</label>
      <input id="site-dir" value={dir} onChange={(e) => setDir(e.target.value)} />
    </CreateForm>
  );
}

/** A kind created from a name and a project alone, then opened at `page`. */
function NameOnly({
  project,
  what,
  kind,
  post,
  page,
}: {
  project: string;
  what: string;
  kind: string;
  post: (body: { display_name: string; project_id?: string }) => Promise<{ id: string }>;
  page: (id: string) => string;
}) {
  const b = useBasics(project);
  const create = useAction(
    () => post({ display_name: b.name, project_id: b.projectId }),
    [[kind], ['projects']],
    (r) => navigate(page(r.id)),
  );
  return <CreateForm what={what} {...b} run={() => create.mutate()} pending={create.isPending} error={create.error} />;
}

export const NewBucket = ({ project }: { project: string }) => (
  <NameOnly
    project={project}
    what="bucket"
    kind="object-storage"
    // The secret key is returned only now (and on rotation): kept for this tab's object browser.
    post={(body) => call(api.POST('/object-storage', { body })).then((r) => (rememberSecret(r.access_key, r.secret_key), r))}
    page={(id) => `/buckets/${id}`}
  />
);

export const NewLoadBalancer = ({ project }: { project: string }) => (
  <NameOnly
    project={project}
    what="load balancer"
    kind="load-balancers"
    post={(body) => call(api.POST('/load-balancers', { body }))}
    page={(id) => `/load-balancers/${id}`}
  />
);

export function NewPipeline({ project }: { project: string }) {
  const b = useBasics(project);
  const [type, setType] = useState<'trunk' | 'branch'>('trunk');
  const create = useAction(
    () => call(api.POST('/pipelines', { body: { display_name: b.name, type, project_id: b.project } })),
    [['pipelines'], ['projects']],
    (p) => navigate(`/pipelines/${p.id}`),
  );
  return (
    <CreateForm what="pipeline" {...b} projectRequired run={() => create.mutate()} pending={create.isPending} error={create.error}>
      <label htmlFor="pipeline-type">Type</label>
      <select id="pipeline-type" value={type} onChange={(e) => setType(e.target.value as typeof type)}>
        <option value="trunk">Trunk (one branch, promoted through stages)</option>
        <option value="branch">Branch (a branch per stage)</option>
      </select>
    </CreateForm>
  );
}

export function randomPassword() {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return `Pw_${Array.from(bytes, (b) => b.toString(36).padStart(2, '0')).join('')}`.slice(0, 28);
}
