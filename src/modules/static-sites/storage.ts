// Tables of the static sites area: sites and their deployments. A deployment runs in a lane:
// `production` (one at a time per site) or `preview:<branch>` (one at a time per branch; lanes of
// different branches run side by side). Also their migrations and the queries on a site's row;
// the queries on deployments are in deployments-storage.ts.
import type { Kysely, Migration } from 'kysely';
import type { Scope } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { insertNamed } from '../../shared/naming.js';
import { paginate, type Page } from '../../shared/pagination.js';

export type SiteStatus = 'deploymentInProgress' | 'deploymentFailed' | 'deploymentSuccess' | 'deploymentCancelled' | 'deleting' | 'deletionFailed';

export interface StaticSitesTable {
  id: string;
  company_id: string;
  project_id: string | null;
  name: string;
  display_name: string;
  /** Follows the latest production deployment; `deleting`/`deletionFailed` during deletion. */
  status: SiteStatus | null;
  source: 'privateGit' | 'publicGit';
  repo_url: string;
  default_branch: string;
  auto_deploy: number;
  is_preview_enabled: number;
  git_type: 'github' | 'bitbucket' | 'gitlab' | null;
  /** The generated system hostname (`<name>-<hex>.slipway.site`). */
  hostname: string;
  install_command: string | null;
  build_command: string | null;
  published_directory: string | null;
  root_directory: string | null;
  node_version: string | null;
  index_file: string | null;
  error_file: string | null;
  git_lfs_enabled: number;
  /** JSON arrays of glob patterns; at most one of them is non-empty. */
  allow_deploy_paths: string;
  ignore_deploy_paths: string;
  pretty_urls: number;
  /** The last edge cache purge (POST purge-cache). */
  cache_purged_at: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

export interface StaticSiteDeploymentsTable {
  id: string;
  static_site_id: string;
  company_id: string;
  /** `skipped`: no changed file was a deploy path (a real build's, or a push's that names its files). */
  status: 'waiting' | 'inProgress' | 'success' | 'failed' | 'cancelled' | 'skipped';
  type: 'manual' | 'automatic';
  /** What started it: `initial` (site creation), `manual`, `rollback`, `push` (git webhooks and polling). */
  trigger: string;
  /** `production` or `preview:<branch>`: deployments of one lane run one after another. */
  lane: string;
  is_preview: number;
  steps: string;
  phase: string | null;
  phase_started_at: string | null;
  /** Reads of the deployment (or, for production, of its site) since the phase began (reads progression). */
  reads: number;
  repo_url: string | null;
  branch: string | null;
  commit_sha: string | null;
  commit_message: string | null;
  author_login: string | null;
  author_img: string | null;
  cloud_build_id: string | null;
  build_error: string | null;
  /** The deployment whose build this one publishes again (rollback), else null. */
  build_of: string | null;
  initiated_by: string | null;
  started_at: string | null;
  finished_at: string | null;
  created_at: string;
  updated_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    static_sites: StaticSitesTable;
    static_site_deployments: StaticSiteDeploymentsTable;
  }
}

export const migrations: Record<string, Migration> = {
  '100_static_sites_sites': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('static_sites')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('project_id', 'varchar(36)')
        .addColumn('name', 'varchar(64)', (c) => c.notNull())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('status', 'varchar(32)')
        .addColumn('source', 'varchar(16)', (c) => c.notNull())
        .addColumn('repo_url', 'text', (c) => c.notNull())
        .addColumn('default_branch', 'text', (c) => c.notNull())
        .addColumn('auto_deploy', 'integer', (c) => c.notNull())
        .addColumn('is_preview_enabled', 'integer', (c) => c.notNull())
        .addColumn('git_type', 'varchar(16)')
        .addColumn('hostname', 'text', (c) => c.notNull())
        .addColumn('install_command', 'text')
        .addColumn('build_command', 'text')
        .addColumn('published_directory', 'text')
        .addColumn('root_directory', 'text')
        .addColumn('node_version', 'varchar(32)')
        .addColumn('index_file', 'text')
        .addColumn('error_file', 'text')
        .addColumn('git_lfs_enabled', 'integer', (c) => c.notNull())
        .addColumn('allow_deploy_paths', 'text', (c) => c.notNull())
        .addColumn('ignore_deploy_paths', 'text', (c) => c.notNull())
        .addColumn('pretty_urls', 'integer', (c) => c.notNull())
        .addColumn('cache_purged_at', 'varchar(32)')
        .addColumn('created_by', 'text')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('static_sites_company').on('static_sites').columns(['company_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('static_sites_name').on('static_sites').columns(['company_id', 'name']).unique().execute();
      await db.schema.createIndex('static_sites_hostname').on('static_sites').column('hostname').unique().execute();
    },
  },
  '101_static_sites_deployments': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('static_site_deployments')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('static_site_id', 'varchar(36)', (c) => c.notNull().references('static_sites.id').onDelete('cascade'))
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('trigger', 'varchar(32)', (c) => c.notNull())
        .addColumn('lane', 'text', (c) => c.notNull())
        .addColumn('is_preview', 'integer', (c) => c.notNull())
        .addColumn('steps', 'text', (c) => c.notNull())
        .addColumn('phase', 'varchar(32)')
        .addColumn('phase_started_at', 'varchar(32)')
        .addColumn('reads', 'integer', (c) => c.notNull())
        .addColumn('repo_url', 'text')
        .addColumn('branch', 'text')
        .addColumn('commit_sha', 'varchar(64)')
        .addColumn('commit_message', 'text')
        .addColumn('author_login', 'text')
        .addColumn('author_img', 'text')
        .addColumn('cloud_build_id', 'varchar(64)')
        .addColumn('build_error', 'text')
        .addColumn('build_of', 'varchar(36)')
        .addColumn('initiated_by', 'text')
        .addColumn('started_at', 'varchar(32)')
        .addColumn('finished_at', 'varchar(32)')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('static_site_deployments_site').on('static_site_deployments').columns(['static_site_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('static_site_deployments_lane').on('static_site_deployments').columns(['static_site_id', 'lane', 'status']).execute();
    },
  },
};

/** Tables of this area, children first (for reset). */
export const tables = ['static_site_deployments', 'static_sites'] as const;

/** The company's static site `id` (undefined when it has none by that id), also while it is being deleted. */
export async function siteOfCompany(tx: Tx, companyId: string, id: string): Promise<StaticSitesTable | undefined> {
  return tx.selectFrom('static_sites').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
}

/** The lane of a site's production deployments (the others are `preview:<branch>`). */
export const PRODUCTION = 'production';

/** A site's production deployment in progress, as a read of the site needs it (see siteWithRunning). */
export type RunningDeployment = Pick<StaticSiteDeploymentsTable, 'id' | 'status' | 'lane'>;

/**
 * The company's static site `id` and its production deployment in progress (null: none), in one
 * statement (a lane runs one at a time, so at most one row); undefined when the company has no
 * site by that id.
 */
export async function siteOfCompanyWithRunning(
  tx: Tx,
  companyId: string,
  id: string,
): Promise<{ site: StaticSitesTable; running: RunningDeployment | null } | undefined> {
  const row = await tx
    .selectFrom('static_sites')
    .leftJoin('static_site_deployments as d', (j) =>
      j.onRef('d.static_site_id', '=', 'static_sites.id').on('d.lane', '=', PRODUCTION).on('d.status', '=', 'inProgress'),
    )
    .selectAll('static_sites')
    .select(['d.id as running_id', 'd.lane as running_lane'])
    .where('static_sites.id', '=', id)
    .where('static_sites.company_id', '=', companyId)
    .executeTakeFirst();
  if (!row) return undefined;
  const { running_id, running_lane, ...site } = row;
  return { site, running: running_id ? { id: running_id, status: 'inProgress', lane: running_lane! } : null };
}

/** A static site by id whatever its company (background work that starts from its own rows). */
export async function siteById(tx: Tx, id: string): Promise<StaticSitesTable | undefined> {
  return tx.selectFrom('static_sites').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * The latest successful deployment of a lane (`production` or `preview:<branch>`): what the lane
 * serves (its release is `build_of ?? id`), and the commit later deployments compare with.
 */
export async function latestRelease(tx: Tx, siteId: string, lane: string) {
  return tx
    .selectFrom('static_site_deployments')
    .select(['id', 'build_of', 'commit_sha'])
    .where('static_site_id', '=', siteId)
    .where('lane', '=', lane)
    .where('status', '=', 'success')
    .orderBy('finished_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** A page of the company's static sites (those of `scope` when given). */
export async function listSitesPage(tx: Tx, companyId: string, scope: Scope, page: Page) {
  let q = tx.selectFrom('static_sites').select(['id', 'name', 'display_name', 'status']).where('company_id', '=', companyId);
  if (scope) q = q.where('id', 'in', scope.size ? [...scope] : ['']);
  return paginate(q, page);
}

/**
 * Inserts a site under a name derived from `displayName`, unique in the company even under
 * concurrent creates (the unique index decides); `build` gives the row for a name.
 */
export function insertNamedSite(tx: Tx, companyId: string, displayName: string, build: (name: string) => StaticSitesTable): Promise<StaticSitesTable> {
  return insertNamed(tx, 'static_sites', companyId, displayName, build);
}

/** Writes `changes` to the site and answers the row as written. */
export async function updateSiteColumns(tx: Tx, id: string, changes: Partial<Omit<StaticSitesTable, 'id'>>): Promise<StaticSitesTable> {
  return tx.updateTable('static_sites').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/**
 * The sites that deploy on push (auto_deploy, not being deleted): of one company, or of all (the git
 * poller). With `includeOff`, those with auto_deploy off too (a push's delivery names them).
 */
export async function autoDeploySiteRows(tx: Tx, companyId?: string, o: { includeOff?: boolean } = {}): Promise<StaticSitesTable[]> {
  let q = tx
    .selectFrom('static_sites')
    .selectAll()
    .where((eb) => eb.or([eb('status', 'is', null), eb('status', 'not in', ['deleting', 'deletionFailed'])]));
  if (!o.includeOff) q = q.where('auto_deploy', '=', 1);
  if (companyId) q = q.where('company_id', '=', companyId);
  return q.execute();
}

/** Sets the status of a site's deletion (`deleting`, or `deletionFailed`). */
export async function setSiteDeletionStatus(tx: Tx, id: string, status: 'deleting' | 'deletionFailed', at: string): Promise<void> {
  await tx.updateTable('static_sites').set({ status, updated_at: at }).where('id', '=', id).execute();
}

export async function setPrettyUrls(tx: Tx, id: string, prettyUrls: number, at: string): Promise<void> {
  await tx.updateTable('static_sites').set({ pretty_urls: prettyUrls, updated_at: at }).where('id', '=', id).execute();
}

export async function setCachePurgedAt(tx: Tx, id: string, at: string): Promise<void> {
  await tx.updateTable('static_sites').set({ cache_purged_at: at }).where('id', '=', id).execute();
}

/** Removes the site's row. */
export async function deleteSiteRow(tx: Tx, id: string): Promise<void> {
  await tx.deleteFrom('static_sites').where('id', '=', id).execute();
}

/** The id, names and hostname of the company's sites among `ids` (the service registry's summaries). */
export function siteSummaryRows(tx: Tx, companyId: string, ids: readonly string[]) {
  return tx.selectFrom('static_sites').select(['id', 'name', 'display_name', 'hostname']).where('id', 'in', ids).where('company_id', '=', companyId).execute();
}
