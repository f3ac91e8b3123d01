// Static sites for real (SLIPWAY_RUNTIME=local): the phases of a deployment (checkout, build,
// publish; local/build.ts) run here instead of on the simulated driver, as background tasks that the
// deployment's job polls (src/shared/runtime/tasks.ts: a restart runs the phase again), and the
// edge serves the sites' releases (local/serve.ts) through its response cache.
//
// What a host names: `<name>.<base domain>` the oldest site of that name (unless an application of
// that name claimed it: applications register with the edge first), `<branch>--<name>.<base domain>`
// the latest preview release of that branch (git.ts `previewLabel`), the site's own `hostname`
// (and `<branch>--<hostname>`), and its verified, enabled custom domains. Production serves the
// release of the latest successful production deployment; a failed or skipped one changes nothing.
// This driver's queries are in runtime-storage.ts.
import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import type { CompiledQuery } from 'kysely';
import type { AppContext, CallContext } from '../../../../shared/context.js';
import { registerExisting } from '../../../domains/index.js';
import type { EdgeSite } from '../../../../shared/edge/index.js';
import { servableIndexFile, type EdgeDescription } from '../../../../shared/edge/table.js';
import { resolve } from 'node:path';
import { page, sendPage } from '../../../../shared/edge/pages.js';
import type { PhaseRequest, PhaseResult } from '../../../../shared/runtime/driver.js';
import { buildLogOf } from '../../../../shared/runtime/logs.js';
import { PhaseTasks, type TaskEnd } from '../../../../shared/runtime/tasks.js';
import { BuildError } from '../../../../shared/runtime/build.js';
import { previewLabel } from '../../git.js';
import { latestRelease, siteById, type StaticSiteDeploymentsTable, type StaticSitesTable } from '../../storage.js';
import { besideDir, buildDir, buildSite, checkoutSite, isPublished, publicDir, publishSite, releaseDir, siteReleasesDir, type SiteBuild } from './build.js';
import type { StaticSitesRuntime } from '../driver.js';
import { inProgressAmong, previewReleases, setDeploymentCommit, sitesToRegister } from './runtime-storage.js';
import { serveRelease } from './serve.js';
import { siteSettings, type SiteSettings } from './settings.js';

const PRODUCTION = 'production';

export class StaticRuntime implements StaticSitesRuntime {
  readonly name = 'local';
  readonly settings: SiteSettings;
  private tasks: PhaseTasks;

  constructor(private app: AppContext) {
    this.settings = siteSettings(app.config);
    this.tasks = new PhaseTasks(app);
  }

  // ---- Phases --------------------------------------------------------------------------------

  /** Advances a deployment's phase: starts its task once, then reports it until it ends. */
  /** Real phases judge nothing from the simulation's settings. */
  phaseReads(): CompiledQuery[] {
    return [];
  }

  advance(ctx: CallContext, d: StaticSiteDeploymentsTable, s: StaticSitesTable, req: PhaseRequest): Promise<PhaseResult> {
    return this.tasks.advance(`${d.id}:${req.phase}`, (signal) => this.prepare(ctx, d, s, req.phase, signal));
  }

  /** Kills the commands of a cancelled deployment's running phase (in this process). */
  cancel(deploymentId: string): void {
    this.tasks.abort(deploymentId);
  }

  /** Reads what a phase needs (inside the step's transaction) and returns the work to run outside it. */
  private async prepare(
    ctx: CallContext,
    d: StaticSiteDeploymentsTable,
    s: StaticSitesTable,
    phase: string,
    signal: AbortSignal,
  ): Promise<() => Promise<TaskEnd>> {
    const root = this.settings.root;
    if (phase === 'publish' && d.build_of) {
      const ok = isPublished(root, s.id, d.build_of);
      return async () => {
        if (!ok) throw new BuildError(`The release of deployment ${d.build_of} is not on this machine (built by another runtime); deploy again`);
      };
    }
    if (!d.repo_url)
      return async () => {
        throw new BuildError('The deployment has no repository');
      };
    const system = ctx.app.ports.environment.system(ctx.app.config.brandPrefix, s, { ...d, docker_image_url: null });
    const env = phase === 'build' ? (await ctx.app.ports.environment.site(ctx, s, { is_preview: d.is_preview === 1, branch: d.branch }, system)).vars : {};
    const previous = phase === 'checkout' ? await latestRelease(ctx.tx, s.id, d.lane) : undefined;
    const access = phase === 'checkout' ? await ctx.app.ports.gitAccess.env(ctx, d.repo_url) : undefined;
    const spec: SiteBuild = {
      siteId: s.id,
      deploymentId: d.id,
      repoUrl: d.repo_url,
      branch: d.branch ?? s.default_branch,
      rootDirectory: s.root_directory,
      installCommand: s.install_command,
      buildCommand: s.build_command,
      publishedDirectory: s.published_directory,
      nodeVersion: s.node_version,
      lfs: s.git_lfs_enabled === 1,
      env,
      previousSha: previous?.commit_sha ?? null,
      access,
      allow: JSON.parse(s.allow_deploy_paths) as string[],
      ignore: JSON.parse(s.ignore_deploy_paths) as string[],
      timeoutMs: this.settings.buildTimeoutMs,
      log: buildLogOf(this.app.database.db, { companyId: d.company_id, ownerId: d.static_site_id, deploymentId: d.id }, phase),
      signal,
    };
    // A failed phase ends the deployment: what it left in the build directory goes.
    const dropOnFailure = (work: () => Promise<TaskEnd>) => () =>
      work().catch(async (e: unknown) => {
        await rm(buildDir(root, d.id), { recursive: true, force: true });
        throw e;
      });
    if (phase === 'checkout')
      return dropOnFailure(async () => {
        const c = await checkoutSite(root, spec);
        await setDeploymentCommit(this.app.database.db, d.id, c.sha, c.message.slice(0, 1000));
        return c.skipped ? { skipped: c.skipped } : undefined;
      });
    if (phase === 'build') return dropOnFailure(() => buildSite(root, spec));
    return dropOnFailure(() => publishSite(root, spec, d.commit_sha ?? ''));
  }

  // ---- The edge ------------------------------------------------------------------------------

  /** The lane of the preview branch whose label is `label` (latest successful first), or undefined. */
  private async previewLane(siteId: string, label: string): Promise<string | undefined> {
    const rows = await previewReleases(this.app.database.db, siteId);
    return rows.find((r) => previewLabel(r.branch ?? '') === label)?.lane;
  }

  /** The edge site of a static site's lane (null: unknown, being deleted, or no such preview). */
  private async site(s: StaticSitesTable | undefined, preview?: string): Promise<EdgeSite | null> {
    if (!s || s.status === 'deleting' || s.status === 'deletionFailed') return null;
    const lane = preview === undefined ? PRODUCTION : await this.previewLane(s.id, preview);
    if (!lane) return null;
    const edge = this.app.runtimes.edge!;
    const root = this.settings.root;
    return {
      owner: { kind: 'static-site', id: s.id, companyId: s.company_id },
      serve: async (req, res, info) => {
        const latest = await latestRelease(this.app.database.db, s.id, lane);
        const releaseId = latest && (latest.build_of ?? latest.id);
        if (!releaseId || !isPublished(root, s.id, releaseId))
          return sendPage(res, 503, page('Not published', 'This site has no release on this machine yet.'), { 'retry-after': '5' });
        const opts = { indexFile: s.index_file || 'index.html', errorFile: s.error_file, pretty: s.pretty_urls === 1 };
        // The release and the site's settings (pretty URLs, index and error files) are part of the key.
        const scope = { owner: s.id, version: `${releaseId}:${s.updated_at}`, purgedAt: s.cache_purged_at };
        await edge.cache.serve(req, res, info, scope, () => serveRelease(req, res, releaseDir(root, s.id, releaseId), opts));
      },
    };
  }

  /**
   * What a proxy in front serves for a site's lane: its release's public directory, with the site's
   * pretty URLs, index file and error file. The origin serves what the proxy's rules do not cover (an
   * index file in a subdirectory or with characters a proxy's configuration cannot hold) and lanes
   * without a release on this machine (its 503).
   */
  private async describe(s: StaticSitesTable | undefined, preview?: string): Promise<EdgeDescription | null> {
    if (!s || s.status === 'deleting' || s.status === 'deletionFailed') return null;
    const lane = preview === undefined ? PRODUCTION : await this.previewLane(s.id, preview);
    const indexFile = s.index_file || 'index.html';
    if (!lane || !servableIndexFile(indexFile)) return null;
    const latest = await latestRelease(this.app.database.db, s.id, lane);
    const releaseId = latest && (latest.build_of ?? latest.id);
    if (!releaseId || !isPublished(this.settings.root, s.id, releaseId)) return null;
    const release = resolve(releaseDir(this.settings.root, s.id, releaseId));
    const beside = besideDir(release);
    const target = {
      type: 'static' as const,
      root: publicDir(release),
      compressedRoot: existsSync(beside) ? beside : null,
      prettyUrls: s.pretty_urls === 1,
      indexFile,
      notFoundPage: s.error_file,
      fallback: null,
    };
    return { target, ipRestriction: null, maintenance: null, cache: null };
  }

  /** Registers the static sites with the edge (from setup()); the domains registry routes their hostnames and preview names here. */
  registerEdge(): void {
    const db = this.app.database.db;
    this.app.runtimes.edge!.register({
      kind: 'static-site',
      byId: async (id, preview) => this.site(await siteById(db, id), preview),
      describe: async (id, preview) => this.describe(await siteById(db, id), preview),
      // Labels of the branches with a successful preview (routeOf picks the latest of a label).
      previews: async (id) => [...new Set((await previewReleases(db, id)).map((r) => previewLabel(r.branch ?? '')).filter(Boolean))],
    });
  }

  // ---- Housekeeping --------------------------------------------------------------------------

  /** Removes a deleted site's releases and cached responses. */
  async forget(siteId: string): Promise<void> {
    this.app.runtimes.edge?.cache.purge(siteId);
    await rm(siteReleasesDir(this.settings.root, siteId), { recursive: true, force: true });
  }

  /** Registers the names of sites from before the edge ran; removes build directories of deployments that no longer run (cancelled, or ended while Slipway was down). */
  async start(): Promise<void> {
    const all = await sitesToRegister(this.app.database.db);
    await registerExisting(
      this.app,
      'static-site',
      all.map((s) => ({ ...s, cluster_id: null })),
    );
    let dirs: string[];
    try {
      dirs = await readdir(`${this.settings.root}/builds`);
    } catch {
      return;
    }
    if (!dirs.length) return;
    const running = new Set(await inProgressAmong(this.app.database.db, dirs));
    for (const id of dirs) if (!running.has(id)) await rm(buildDir(this.settings.root, id), { recursive: true, force: true });
  }
}

/** Real static sites on a server with SLIPWAY_RUNTIME=local, wired in (from the module's setup, through runtime/index.ts). */
export function setupStaticRuntime(app: AppContext): StaticRuntime {
  const rt = new StaticRuntime(app);
  rt.registerEdge();
  // The releases go with the site (were the deletion's transaction to roll back, the site would need deploying again).
  app.events.on('static-site.removed', async (_tx, { site }) => void rt.forget(site.id).catch(() => {}));
  return rt;
}
