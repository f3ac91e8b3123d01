// Static sites: create (which queues the initial production deployment), read, update, delete
// (cancels running deployments, goes through `deleting`, then removes the site and everything it
// owns in a durable job), pretty URLs, edge cache purges, simulated access logs and traffic metrics.
import { servingChanged } from '../../shared/edge/index.js';
import type { AppContext, CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { badRequest, conflict } from '../../shared/errors.js';
import { newId, slugify } from '../../shared/ids.js';
import { enqueue, type JobKind } from '../../shared/jobs.js';
import { systemHostname } from '../domains/index.js';
import type { Page } from '../../shared/pagination.js';
import { deleteLogs, writeLogs } from '../../shared/runtime/logs.js';
import { teardownStep } from '../../shared/runtime/phases.js';
import { accessLog, trafficMetric as metricOf } from '../../shared/edge/traffic.js';
import type { TrafficMetric, TrafficSource, Window } from '../../shared/runtime/traffic.js';
import { forgetService, placeService } from '../projects/index.js';
import { cancelActiveDeployments, createDeployment, noteRead } from './deployments.js';
import { checkBranch, checkDeployPaths, checkRepoUrl, gitTypeFor, type GitType } from './git.js';
import { deleteSiteDeployments, firstProductionFinishedAt } from './deployments-storage.js';
import { findSite, siteWithRunning } from './find.js';
import {
  deleteSiteRow,
  insertNamedSite,
  listSitesPage,
  setCachePurgedAt,
  setPrettyUrls,
  setSiteDeletionStatus,
  siteById,
  siteSummaryRows,
  updateSiteColumns,
  type StaticSitesTable,
} from './storage.js';
import { siteUpdateView, siteView } from './views.js';

export const DELETE_JOB = 'static-site.delete';
/** The simulated runtime's operation name for the teardown of a deleted site. */
export const DELETE_OPERATION = 'static_site_delete';

declare module '../../shared/jobs.js' {
  interface JobMap {
    /** Tears a static site down in the runtime, then removes it and everything it owns. */
    'static-site.delete': { siteId: string; startedAt: string };
  }
}

export async function listSites({ tx, companyId, scope }: CallContext, page: Page) {
  return listSitesPage(tx, companyId, scope, page);
}

/** GET /static-sites/{id}; in `reads` progression the read counts toward the running production deployment first. */
export async function getSite(ctx: CallContext, id: string) {
  const { site, running } = await siteWithRunning(ctx, id);
  return siteView((await noteRead(ctx.app, id, running)) ? await findSite(ctx, id) : site);
}

export interface CreateInput {
  display_name: string;
  repo_url: string;
  default_branch: string;
  source?: 'privateGit' | 'publicGit';
  git_type?: GitType;
  auto_deploy?: boolean;
  is_preview_enabled?: boolean;
  install_command?: string;
  build_command?: string;
  published_directory?: string;
  root_directory?: string;
  node_version?: string;
  index_file?: string;
  error_file?: string;
  project_id?: string;
  git_lfs_enabled?: boolean;
  allow_deploy_paths?: string[];
  ignore_deploy_paths?: string[];
}

const bit = (v: boolean | undefined, dflt: boolean) => ((v ?? dflt) ? 1 : 0);

/** Creates the site with a unique name and system hostname, then queues its first production deployment. */
export async function createSite(ctx: CallContext, input: CreateInput) {
  const { tx, app, companyId } = ctx;
  const source = input.source ?? 'privateGit';
  // Local repositories (file://) are for development and tests: production takes network addresses only.
  const local = app.config.realRuntime && !app.config.production;
  checkRepoUrl(input.repo_url, local);
  const branch = checkBranch(input.default_branch);
  if (!branch) throw badRequest('default_branch must name a branch');
  const allow = input.allow_deploy_paths ?? [];
  const ignore = input.ignore_deploy_paths ?? [];
  checkDeployPaths(allow, ignore);
  const now = new Date().toISOString();
  const base: Omit<StaticSitesTable, 'id' | 'name' | 'hostname'> = {
    company_id: companyId,
    project_id: input.project_id ?? null,
    display_name: input.display_name,
    status: null,
    source,
    repo_url: input.repo_url,
    default_branch: branch,
    auto_deploy: bit(input.auto_deploy, true),
    is_preview_enabled: bit(input.is_preview_enabled, false),
    git_type: gitTypeFor(source, input.repo_url, input.git_type, local),
    install_command: input.install_command ?? null,
    build_command: input.build_command ?? null,
    published_directory: input.published_directory ?? null,
    root_directory: input.root_directory ?? null,
    node_version: input.node_version ?? null,
    index_file: input.index_file ?? 'index.html',
    error_file: input.error_file ?? null,
    git_lfs_enabled: bit(input.git_lfs_enabled, true),
    allow_deploy_paths: JSON.stringify(allow),
    ignore_deploy_paths: JSON.stringify(ignore),
    pretty_urls: 0,
    cache_purged_at: null,
    created_by: ctx.actor,
    created_at: now,
    updated_at: now,
  };
  const row = await insertUnique(ctx, base);
  await placeService(ctx, row.id, 'static-site', row.project_id);
  await app.events.signal(tx, 'static-site.created', { site: row });
  await createDeployment(ctx, row, { trigger: 'initial', type: 'automatic', branch: row.default_branch, isPreview: false });
  await app.events.emit(tx, 'STATIC_SITE_CREATE', companyId, row);
  return siteView((await siteById(tx, row.id))!);
}

/** Inserts the site under a free name (`my-site`, `my-site-2`, ...) and its system hostname. */
async function insertUnique({ tx, app }: CallContext, base: Omit<StaticSitesTable, 'id' | 'name' | 'hostname'>): Promise<StaticSitesTable> {
  const display = slugify(base.display_name) ? base.display_name : 'site';
  return insertNamedSite(tx, base.company_id, display, (name) => ({
    ...base,
    id: newId(),
    name,
    hostname: systemHostname(app, 'static-site', name),
  }));
}

export interface UpdateInput {
  display_name?: string;
  auto_deploy?: boolean;
  default_branch?: string;
  build_command?: string | null;
  node_version?: string | null;
  published_directory?: string | null;
  is_preview_enabled?: boolean;
  install_command?: string | null;
  root_directory?: string | null;
  index_file?: string;
  error_file?: string | null;
  source?: 'privateGit' | 'publicGit';
  git_type?: GitType | null;
  repo_url?: string;
  git_lfs_enabled?: boolean;
  allow_deploy_paths?: string[];
  ignore_deploy_paths?: string[];
}

/** The site while it is not being deleted (409 otherwise). */
async function mutableSite(ctx: CallContext, id: string) {
  const s = await findSite(ctx, id);
  if (s.status === 'deleting') throw conflict('The static site is being deleted');
  return s;
}

/**
 * PATCH: omitted fields keep their value, null clears an optional setting. Build settings apply
 * from the next deployment. The result must still satisfy the creation rules (repository URL,
 * provider of a private repository, one deploy path list at most).
 */
export async function updateSite(ctx: CallContext, id: string, u: UpdateInput) {
  const { tx, app, companyId } = ctx;
  const s = await mutableSite(ctx, id);
  const pick = <K extends keyof UpdateInput & keyof StaticSitesTable>(k: K): StaticSitesTable[K] =>
    u[k] === undefined ? s[k] : (u[k] as unknown as StaticSitesTable[K]);
  const b = (v: boolean | undefined, cur: number) => (v === undefined ? cur : v ? 1 : 0);
  const source = u.source ?? s.source;
  const repoUrl = u.repo_url ?? s.repo_url;
  // Local repositories (file://) are for development and tests: production takes network addresses only.
  const local = app.config.realRuntime && !app.config.production;
  if (u.repo_url !== undefined) checkRepoUrl(u.repo_url, local);
  if (u.default_branch !== undefined) checkBranch(u.default_branch);
  const allow = u.allow_deploy_paths ?? (JSON.parse(s.allow_deploy_paths) as string[]);
  const ignore = u.ignore_deploy_paths ?? (JSON.parse(s.ignore_deploy_paths) as string[]);
  checkDeployPaths(allow, ignore);
  // The provider: given, or told again from the repository's host when the source or repository changes.
  const moved = u.source !== undefined || u.repo_url !== undefined;
  const provider = u.git_type !== undefined ? u.git_type : moved ? null : s.git_type;
  const next: StaticSitesTable = {
    ...s,
    display_name: pick('display_name'),
    auto_deploy: b(u.auto_deploy, s.auto_deploy),
    default_branch: pick('default_branch'),
    build_command: pick('build_command'),
    node_version: pick('node_version'),
    published_directory: pick('published_directory'),
    is_preview_enabled: b(u.is_preview_enabled, s.is_preview_enabled),
    install_command: pick('install_command'),
    root_directory: pick('root_directory'),
    index_file: pick('index_file'),
    error_file: pick('error_file'),
    source,
    repo_url: repoUrl,
    git_type: gitTypeFor(source, repoUrl, provider, local),
    git_lfs_enabled: b(u.git_lfs_enabled, s.git_lfs_enabled),
    allow_deploy_paths: JSON.stringify(allow),
    ignore_deploy_paths: JSON.stringify(ignore),
    updated_at: new Date().toISOString(),
  };
  // Only the columns an update sets: the status, pretty URLs and cache purge have writers of their
  // own, and the copy read above must not overwrite what one of them committed meanwhile
  // (PostgreSQL runs them concurrently).
  const { id: _id, company_id: _c, created_at: _ca, status: _s, pretty_urls: _pu, cache_purged_at: _cp, ...changes } = next;
  const updated = await updateSiteColumns(tx, id, changes);
  servingChanged(app, tx);
  await app.events.emit(tx, 'STATIC_SITE_UPDATE', companyId, updated);
  return siteUpdateView(updated);
}

/**
 * DELETE: cancels the site's running and waiting deployments, marks it `deleting` and leaves the
 * rest to the deletion job. A site already being deleted answers 409; after a failed deletion
 * (`deletionFailed`) the request starts it again.
 */
export async function deleteSite(ctx: CallContext, id: string) {
  const { tx } = ctx;
  const s = await mutableSite(ctx, id);
  await cancelActiveDeployments(ctx, s.id, 'The static site is being deleted');
  const now = new Date().toISOString();
  await setSiteDeletionStatus(tx, id, 'deleting', now);
  // The edge serves nothing of a site being deleted, from when this answers.
  servingChanged(ctx.app, tx);
  await enqueue(tx, { kind: DELETE_JOB, payload: { siteId: id, startedAt: now }, subjectId: id });
  return { message: 'Static site deletion started' };
}

/** Removes a static site and everything it owns, after the runtime tore it down. */
export const deleteJob = (app: AppContext): JobKind<typeof DELETE_JOB> => ({
  async run(tx, job) {
    const s = await siteById(tx, job.payload.siteId);
    if (!s || s.status !== 'deleting') return;
    return teardownStep(app, tx, s, DELETE_OPERATION, job.payload.startedAt, {
      async failed() {
        await setSiteDeletionStatus(tx, s.id, 'deletionFailed', new Date().toISOString());
      },
      async remove() {
        await app.events.signal(tx, 'static-site.removed', { site: s });
        await deleteLogs(tx, s.id);
        await deleteSiteDeployments(tx, s.id);
        await forgetService(tx, s.id);
        await deleteSiteRow(tx, s.id);
        await app.events.emit(tx, 'STATIC_SITE_DELETE', s.company_id, s);
      },
    });
  },
});

/** Flips pretty URLs (`/about` served from `/about/index.html` or `/about.html`); takes effect at the edge at once. */
export async function togglePrettyUrls(ctx: CallContext, id: string) {
  const { tx } = ctx;
  const s = await findSite(ctx, id);
  const on = s.pretty_urls ? 0 : 1;
  await setPrettyUrls(tx, id, on, new Date().toISOString());
  servingChanged(ctx.app, tx);
  await writeLogs(tx, { companyId: s.company_id, appId: s.id, kind: 'runtime' }, [{ message: `Pretty URLs turned ${on ? 'on' : 'off'}` }]);
  return { is_turned_on: on === 1 };
}

/**
 * Purges the site's edge cache: at once in this process; the others serve nothing cached before
 * `cache_purged_at`. Recorded in the site's runtime log.
 */
export async function purgeCache(ctx: CallContext, id: string) {
  const { tx } = ctx;
  const s = await findSite(ctx, id);
  await setCachePurgedAt(tx, id, new Date().toISOString());
  ctx.app.runtimes.edge?.cache.purge(s.id);
  await writeLogs(tx, { companyId: s.company_id, appId: s.id, kind: 'runtime' }, [{ message: `Edge cache purged for ${s.hostname}` }]);
  return { message: 'Cache purge started' };
}

/** The site as a source of simulated traffic: it serves from its first successful production deployment. */
async function trafficOf(tx: Tx, s: StaticSitesTable): Promise<TrafficSource> {
  const finishedAt = await firstProductionFinishedAt(tx, s.id);
  const serving = s.status !== 'deleting' && s.status !== 'deletionFailed' && finishedAt;
  return { id: s.id, name: s.name, host: s.hostname, since: serving ? Date.parse(finishedAt!) : null };
}

export async function accessLogs(ctx: CallContext, id: string, q: { from?: string; to?: string; filters?: string; limit?: number }) {
  const s = await findSite(ctx, id);
  return accessLog(ctx.app, await trafficOf(ctx.tx, s), q);
}

/** One traffic metric of the caller's static site over a window. */
export async function trafficMetric(ctx: CallContext, id: string, metric: TrafficMetric, w: Window) {
  const s = await findSite(ctx, id);
  return metricOf(ctx.app, await trafficOf(ctx.tx, s), metric, w);
}

/** The service registry's view of a static site (projects, domains). Sites have no region. */
export function siteSummaries({ tx, companyId }: CallContext, ids: readonly string[]) {
  return siteSummaryRows(tx, companyId, ids);
}
