// Applications: create, read, update, suspend/activate, clone and deletion (which cancels
// running work first, goes through `deleting`, then removes processes, variables and
// deployments in a durable job).
import { randomBytes } from 'node:crypto';
import type { AppContext, CallContext } from '../../shared/context.js';
import { badRequest } from '../../shared/errors.js';
import { gitProviderOf, privateGitProvider, repoAddressProblem, type GitType } from '../../shared/git.js';
import { newId } from '../../shared/ids.js';
import { enqueue, type JobKind } from '../../shared/jobs.js';
import { servingChanged } from '../../shared/edge/index.js';
import { systemHostname } from '../domains/index.js';
import type { Page, PageResult } from '../../shared/pagination.js';
import { sharedView } from '../../shared/shared-results.js';
import { deleteLogs, writeLogs } from '../../shared/runtime/logs.js';
import { teardownStep } from '../../shared/runtime/phases.js';
import { CLUSTER_BY_ID } from '../resources/index.js';
import { forgetService, placeService } from '../projects/index.js';
import { cancelActiveDeployments, createDeployment, noteRead } from './deployments.js';
import { deleteAppDeployments, lockApp } from './deployments-storage.js';
import { appWithActive, findApp } from './find.js';
import {
  appById,
  appSummaryRows,
  deleteAppRow,
  insertNamedApp,
  listAppsPage,
  setAppDeletionStatus,
  setAppProjectId,
  setAppSuspended,
  updateAppColumns,
  type ApplicationsTable,
} from './storage.js';

export const DELETE_JOB = 'application.delete';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Tears an application down in the runtime, then removes it and everything it owns. */
    'application.delete': { appId: string; startedAt: string };
  }
}

const bool = (n: number) => n === 1;
const json = <T>(s: string) => JSON.parse(s) as T;

/** The representation returned by create, update and clone. */
export function appView(a: ApplicationsTable) {
  return {
    id: a.id,
    company_id: a.company_id,
    project_id: a.project_id,
    name: a.name,
    namespace: a.namespace,
    display_name: a.display_name,
    source: a.source,
    type: a.type,
    status: a.status,
    build_cache_enabled: bool(a.build_cache_enabled),
    hibernation_enabled: bool(a.hibernation_enabled),
    hibernate_after_seconds: a.hibernate_after_seconds,
    auto_deploy: bool(a.auto_deploy),
    is_suspended: bool(a.is_suspended),
    git_type: a.git_type,
    repo_url: a.repo_url,
    default_branch: a.default_branch,
    docker_image: a.docker_image,
    build_type: a.build_type,
    build_path: a.build_path,
    pack_builder: a.pack_builder,
    nixpacks_version: a.nixpacks_version,
    dockerfile_path: a.dockerfile_path,
    docker_context: a.docker_context,
    allow_deploy_paths: json<string[]>(a.allow_deploy_paths),
    ignore_deploy_paths: json<string[]>(a.ignore_deploy_paths),
    created_by: a.created_by,
    created_at: a.created_at,
    updated_at: a.updated_at,
    git_lfs_enabled: bool(a.git_lfs_enabled),
  };
}

/** The full representation of GET /applications/{id}. */
export function appDetailView(a: ApplicationsTable) {
  return {
    ...appView(a),
    buildpacks: json<{ id: string; source: string; order: number }[]>(a.buildpacks),
    cluster_id: a.cluster_id,
    docker_registry_credential_id: a.docker_registry_credential_id,
  };
}

export async function listApps({ tx, companyId, scope, asOf }: CallContext, page: Page) {
  const res = await listAppsPage(tx, companyId, scope, asOf, page);
  return sharedView(res, listView);
}

const listView = <R extends { is_suspended: number }>(res: PageResult<R>) => ({
  ...res,
  data: res.data.map((r) => ({ ...r, is_suspended: bool(r.is_suspended) })),
});

function checkCluster(id: string) {
  const c = CLUSTER_BY_ID.get(id);
  if (!c) throw badRequest(`Unknown cluster_id ${id}; see GET /resources/clusters`);
  return c;
}

/**
 * The provider of an application's repository, told as for static sites (shared/git.ts): given,
 * else from the host. One that cannot be told (a self-hosted server, a local path) is null for a
 * public repository and must be given for a private one. An image has none.
 */
function gitTypeOf(a: Pick<ApplicationsTable, 'source' | 'repo_url'>, given: GitType | null | undefined): GitType | null {
  // Without a repository checkSource refuses the source.
  if (a.source === 'dockerImage' || !a.repo_url) return null;
  return a.source === 'privateGit' ? privateGitProvider(a.repo_url, given) : (given ?? gitProviderOf(a.repo_url));
}

function checkSource(a: Pick<ApplicationsTable, 'source' | 'repo_url' | 'docker_image'>, production: boolean) {
  if (a.source === 'dockerImage' && !a.docker_image) throw badRequest('docker_image is required when source is dockerImage');
  if ((a.source === 'privateGit' || a.source === 'publicGit') && !a.repo_url) throw badRequest(`repo_url is required when source is ${a.source}`);
  const problem = a.repo_url ? repoAddressProblem(a.repo_url, production) : null;
  if (problem) throw badRequest(problem);
}

export function assertMutable(a: ApplicationsTable) {
  if (a.status === 'deleting') throw badRequest('The application is being deleted');
}

/** GET /applications/{id}; in `reads` progression the read counts (and may advance a deployment) first. */
export async function getApp(ctx: CallContext, id: string) {
  const { app: a, active } = await appWithActive(ctx, id);
  const running = active.find((d) => d.status === 'inProgress');
  return appDetailView((await noteRead(ctx.app, id, running)) ? await findApp(ctx, id) : a);
}

type Named = 'name' | 'namespace' | 'temp_domain';

/**
 * Inserts an application whose name (and so namespace and temporary domain) derives from its
 * display name, unique in the company even under concurrent creates (the unique index decides).
 */
async function insertApp({ tx, app }: CallContext, fields: Omit<ApplicationsTable, Named>): Promise<ApplicationsTable> {
  return insertNamedApp(tx, fields.company_id, fields.display_name, (name) => ({
    ...fields,
    name,
    namespace: `app-${name}-${randomBytes(4).toString('hex')}`,
    temp_domain: systemHostname(app, 'app', name, fields.cluster_id),
  }));
}

export interface CreateInput {
  display_name: string;
  cluster_id: string;
  source: 'privateGit' | 'publicGit' | 'dockerImage';
  project_id?: string | null;
  git_type?: ApplicationsTable['git_type'];
  repo_url?: string | null;
  default_branch?: string | null;
  docker_image?: string | null;
  docker_registry_credential_id?: string | null;
}

export async function createApp(ctx: CallContext, input: CreateInput) {
  const { tx, app, companyId } = ctx;
  const cluster = checkCluster(input.cluster_id);
  const now = new Date().toISOString();
  const fields: Omit<ApplicationsTable, Named> = {
    id: newId(),
    company_id: companyId,
    project_id: input.project_id ?? null,
    cluster_id: cluster.id,
    display_name: input.display_name,
    source: input.source,
    type: 'app',
    status: null,
    build_cache_enabled: 1,
    hibernation_enabled: 0,
    hibernate_after_seconds: null,
    auto_deploy: 1,
    is_suspended: 0,
    git_type: null,
    repo_url: input.repo_url ?? null,
    default_branch: input.source === 'dockerImage' ? null : (input.default_branch ?? 'main'),
    docker_image: input.docker_image ?? null,
    build_type: input.source === 'dockerImage' ? 'dockerfile' : 'nixpacks',
    build_path: null,
    pack_builder: null,
    nixpacks_version: null,
    dockerfile_path: null,
    docker_context: null,
    allow_deploy_paths: '[]',
    ignore_deploy_paths: '[]',
    buildpacks: '[]',
    docker_registry_credential_id: input.docker_registry_credential_id ?? null,
    git_lfs_enabled: 1,
    hook_token: null,
    created_by: ctx.actor,
    created_at: now,
    updated_at: now,
  };
  checkSource(fields, ctx.app.config.production);
  fields.git_type = gitTypeOf(fields, input.git_type);
  const row = await insertApp(ctx, fields);
  await placeService(ctx, row.id, 'app', row.project_id);
  await app.events.signal(tx, 'application.created', { application: row, clonedFrom: null });
  await app.events.emit(tx, 'APP_CREATE', companyId, row);
  return appView(row);
}

export interface UpdateInput {
  display_name?: string;
  auto_deploy?: boolean;
  default_branch?: string;
  hibernation_enabled?: boolean;
  hibernate_after_seconds?: number;
  build_type?: ApplicationsTable['build_type'];
  build_path?: string;
  dockerfile_path?: string;
  docker_context?: string;
  build_cache_enabled?: boolean;
  docker_registry_credential_id?: string;
  pack_builder?: string;
  nixpacks_version?: string;
  buildpacks?: { order: number; source: string }[];
  allow_deploy_paths?: string[];
  ignore_deploy_paths?: string[];
  source?: 'privateGit' | 'publicGit' | 'dockerImage';
  git_type?: 'github' | 'bitbucket' | 'gitlab';
  repo_url?: string;
  docker_image?: string;
  git_lfs_enabled?: boolean;
}

export async function updateApp(ctx: CallContext, id: string, u: UpdateInput) {
  const { tx, app, companyId } = ctx;
  const a = await findApp(ctx, id);
  assertMutable(a);
  const b = (v: boolean | undefined, cur: number) => (v === undefined ? cur : v ? 1 : 0);
  const next: ApplicationsTable = {
    ...a,
    display_name: u.display_name ?? a.display_name,
    auto_deploy: b(u.auto_deploy, a.auto_deploy),
    default_branch: u.default_branch ?? a.default_branch,
    hibernation_enabled: b(u.hibernation_enabled, a.hibernation_enabled),
    hibernate_after_seconds: u.hibernate_after_seconds ?? a.hibernate_after_seconds,
    build_type: u.build_type ?? a.build_type,
    build_path: u.build_path ?? a.build_path,
    dockerfile_path: u.dockerfile_path ?? a.dockerfile_path,
    docker_context: u.docker_context ?? a.docker_context,
    build_cache_enabled: b(u.build_cache_enabled, a.build_cache_enabled),
    docker_registry_credential_id: u.docker_registry_credential_id ?? a.docker_registry_credential_id,
    pack_builder: u.pack_builder ?? a.pack_builder,
    nixpacks_version: u.nixpacks_version ?? a.nixpacks_version,
    buildpacks: u.buildpacks ? JSON.stringify(u.buildpacks.map((p) => ({ id: newId(), source: p.source, order: p.order }))) : a.buildpacks,
    allow_deploy_paths: u.allow_deploy_paths ? JSON.stringify(u.allow_deploy_paths) : a.allow_deploy_paths,
    ignore_deploy_paths: u.ignore_deploy_paths ? JSON.stringify(u.ignore_deploy_paths) : a.ignore_deploy_paths,
    source: u.source ?? a.source,
    git_type: a.git_type,
    repo_url: u.repo_url ?? a.repo_url,
    docker_image: u.docker_image ?? a.docker_image,
    git_lfs_enabled: b(u.git_lfs_enabled, a.git_lfs_enabled),
    updated_at: new Date().toISOString(),
  };
  checkSource(next, ctx.app.config.production);
  // The provider: given, or told anew when the source or the repository changes.
  if (u.git_type !== undefined || u.source !== undefined || u.repo_url !== undefined) next.git_type = gitTypeOf(next, u.git_type);
  // Only the columns an update sets: the status, suspension, hook token and project have writers of
  // their own (a deployment's end, say), and the copy read above must not overwrite what one of
  // them committed meanwhile (PostgreSQL runs them concurrently).
  const { id: _id, company_id: _c, created_at: _ca, status: _s, is_suspended: _su, hook_token: _h, project_id: _p, ...changes } = next;
  const updated = await updateAppColumns(tx, id, changes);
  await app.events.emit(tx, 'APP_UPDATE', companyId, updated);
  return appView(updated);
}

export async function setSuspended(ctx: CallContext, id: string, suspended: boolean) {
  const { tx, app, companyId } = ctx;
  const a = await findApp(ctx, id);
  assertMutable(a);
  if (bool(a.is_suspended) === suspended) return { message: suspended ? 'Application is already suspended' : 'Application is already active' };
  const now = new Date().toISOString();
  await setAppSuspended(tx, id, suspended ? 1 : 0, now);
  const updated = { ...a, is_suspended: suspended ? 1 : 0, updated_at: now };
  if (suspended) {
    await app.events.signal(tx, 'application.stopped', { application: updated });
    // Its instances get no request from the edge once this answers (they stop in the background).
    servingChanged(app, tx);
    await writeLogs(tx, { companyId, appId: id, kind: 'runtime' }, [{ message: 'Application suspended: all processes stopped' }]);
  } else {
    await writeLogs(tx, { companyId, appId: id, kind: 'runtime' }, [{ message: 'Application activated' }]);
    if (a.status === 'deploymentSuccess') await app.events.signal(tx, 'application.released', { application: updated, deploymentId: null });
  }
  await app.events.emit(tx, 'APP_UPDATE', companyId, updated);
  return { message: suspended ? 'Application suspended' : 'Application activated' };
}

/** What a clone becomes: a regular application (clone), or a preview app of a branch (pipelines). */
export interface CloneAs {
  type: 'previewApp';
  /** The branch the preview app tracks and first deploys. */
  branch: string;
  /** The repository to build from (the pipeline's), when it differs from the source's. */
  repoUrl?: string | null;
  /** The commit the first deployment builds (a pull request's head), when known. */
  commit?: { sha: string; message?: string | null; author?: string | null };
}

/**
 * A copy of an application (processes, variables, build settings and configuration, without its
 * temporary domain) with a first deployment. `as` makes it a preview app of a branch instead of a
 * regular application.
 */
export async function cloneApp(ctx: CallContext, id: string, body: { display_name: string; cluster_id?: string }, as?: CloneAs) {
  const { tx, app, companyId } = ctx;
  const src = await findApp(ctx, id);
  assertMutable(src);
  if (as && src.source === 'dockerImage') throw badRequest(`Application ${src.id} deploys a Docker image; preview apps build a branch of a Git repository`);
  const cluster = checkCluster(body.cluster_id ?? src.cluster_id);
  const now = new Date().toISOString();
  const { name: _n, namespace: _ns, temp_domain: _t, ...inherited } = src;
  const row = await insertApp(ctx, {
    ...inherited,
    id: newId(),
    display_name: body.display_name,
    cluster_id: cluster.id,
    type: as?.type ?? 'app',
    default_branch: as ? as.branch : src.default_branch,
    repo_url: as?.repoUrl ?? src.repo_url,
    status: null,
    is_suspended: 0,
    buildpacks: JSON.stringify(json<{ source: string; order: number }[]>(src.buildpacks).map((p) => ({ ...p, id: newId() }))),
    hook_token: null,
    created_by: ctx.actor,
    created_at: now,
    updated_at: now,
  });
  await placeService(ctx, row.id, 'app', row.project_id);
  await app.events.signal(tx, 'application.created', { application: row, clonedFrom: src });
  await createDeployment(
    ctx,
    row,
    as ? { trigger: 'preview', type: 'automatic', branch: as.branch, commit: as.commit } : { trigger: 'clone', type: 'automatic' },
  );
  await app.events.emit(tx, 'APP_CREATE', companyId, row);
  return appView(await findApp(ctx, row.id));
}

/** Moves the application into project `projectId` (null: into none); e.g. a pipeline hands its project on. */
export async function setAppProject(ctx: CallContext, id: string, projectId: string | null): Promise<void> {
  const a = await findApp(ctx, id);
  if (a.project_id === projectId) return;
  await setAppProjectId(ctx.tx, id, projectId, new Date().toISOString());
  await placeService(ctx, id, 'app', projectId);
}

export async function deleteApp(ctx: CallContext, id: string) {
  const { tx, app } = ctx;
  const a = await findApp(ctx, id);
  if (a.status === 'deleting') return { message: 'Application deletion is in progress' };
  await lockApp(tx, a.id);
  await cancelActiveDeployments(ctx, a.id, 'The application is being deleted');
  await app.events.signal(tx, 'application.stopped', { application: a });
  await setAppDeletionStatus(tx, id, 'deleting', new Date().toISOString());
  // Its hostnames stop reaching its instances when this answers (the edge serves nothing of an
  // application being deleted); its names are freed by the deletion job.
  servingChanged(app, tx);
  await enqueue(tx, { kind: DELETE_JOB, payload: { appId: id, startedAt: new Date().toISOString() }, subjectId: id });
  return { message: 'Application deletion started' };
}

/** Removes an application and everything it owns, after the runtime tore it down. */
export const deleteJob = (app: AppContext): JobKind<typeof DELETE_JOB> => ({
  async run(tx, job) {
    const a = await appById(tx, job.payload.appId);
    if (!a || a.status !== 'deleting') return;
    return teardownStep(app, tx, a, 'app_delete', job.payload.startedAt, {
      async failed() {
        await setAppDeletionStatus(tx, a.id, 'appDeletionFailed', new Date().toISOString());
      },
      async remove() {
        await app.events.signal(tx, 'application.removed', { application: a });
        await deleteLogs(tx, a.id);
        await deleteAppDeployments(tx, a.id);
        await forgetService(tx, a.id);
        await deleteAppRow(tx, a.id);
        await app.events.emit(tx, 'APP_DELETE', a.company_id, a);
      },
    });
  },
});

/** The service registry's view of an application (projects, cross-service checks). */
export function appSummaries({ tx, companyId }: CallContext, ids: readonly string[]) {
  return appSummaryRows(tx, companyId, ids);
}
