// Tables of the applications area (applications and their deployments), their migrations, and the
// queries on an application's row. The queries on deployments are in deployments-storage.ts, those
// on an application's settings in settings-storage.ts.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Scope } from '../../shared/context.js';
import { together, type Tx } from '../../shared/db/index.js';
import { all, first, reusable } from '../../shared/db/reusable.js';
import { insertNamed } from '../../shared/naming.js';
import { countedTable, paginate, type Page } from '../../shared/pagination.js';

export interface ApplicationsTable {
  id: string;
  company_id: string;
  project_id: string | null;
  cluster_id: string;
  name: string;
  namespace: string;
  display_name: string;
  source: 'privateGit' | 'publicGit' | 'dockerImage' | 'app';
  type: 'app' | 'previewApp';
  status: 'deploymentInProgress' | 'deploymentFailed' | 'deploymentSuccess' | 'deleting' | 'appDeletionFailed' | 'deploymentCancelled' | null;
  build_cache_enabled: number;
  hibernation_enabled: number;
  hibernate_after_seconds: number | null;
  auto_deploy: number;
  is_suspended: number;
  git_type: 'github' | 'bitbucket' | 'gitlab' | null;
  repo_url: string | null;
  default_branch: string | null;
  docker_image: string | null;
  build_type: 'dockerfile' | 'pack' | 'nixpacks' | 'railpack';
  build_path: string | null;
  pack_builder: string | null;
  nixpacks_version: string | null;
  dockerfile_path: string | null;
  docker_context: string | null;
  allow_deploy_paths: string;
  ignore_deploy_paths: string;
  buildpacks: string;
  docker_registry_credential_id: string | null;
  git_lfs_enabled: number;
  /** Generated temporary domain (`<name>.<cluster>.slipway.local`); not carried over by clone. */
  temp_domain: string;
  /** Token of the deployment hook URL; null when the hook is disabled. */
  hook_token: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

export interface DeploymentsTable {
  id: string;
  app_id: string;
  company_id: string;
  status: 'waiting' | 'inProgress' | 'success' | 'failed' | 'cancelled' | 'skipped';
  type: 'manual' | 'automatic';
  trigger: string;
  steps: string;
  /** The phase being worked on while inProgress (one of steps). */
  phase: string | null;
  phase_started_at: string | null;
  /** Reads of the deployment (or its application) since the phase began (reads progression). */
  reads: number;
  docker_image_url: string | null;
  git_type: string | null;
  repo_url: string | null;
  branch: string | null;
  commit_sha: string | null;
  commit_message: string | null;
  author_login: string | null;
  author_img: string | null;
  /** The deployment whose build this one runs (itself, or the rolled-back-to build). */
  build_of: string | null;
  is_restart: number;
  initiated_by: string | null;
  started_at: string | null;
  finished_at: string | null;
  created_at: string;
  updated_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    applications: ApplicationsTable;
    deployments: DeploymentsTable;
  }
}

export const migrations: Record<string, Migration> = {
  '010_applications': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('applications')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('project_id', 'varchar(36)')
        .addColumn('cluster_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('name', 'varchar(64)', (c) => c.notNull())
        .addColumn('namespace', 'varchar(128)', (c) => c.notNull())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('source', 'varchar(16)', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('status', 'varchar(32)')
        .addColumn('build_cache_enabled', 'integer', (c) => c.notNull())
        .addColumn('hibernation_enabled', 'integer', (c) => c.notNull())
        .addColumn('hibernate_after_seconds', 'integer')
        .addColumn('auto_deploy', 'integer', (c) => c.notNull())
        .addColumn('is_suspended', 'integer', (c) => c.notNull())
        .addColumn('git_type', 'varchar(16)')
        .addColumn('repo_url', 'text')
        .addColumn('default_branch', 'text')
        .addColumn('docker_image', 'text')
        .addColumn('build_type', 'varchar(16)', (c) => c.notNull())
        .addColumn('build_path', 'text')
        .addColumn('pack_builder', 'text')
        .addColumn('nixpacks_version', 'text')
        .addColumn('dockerfile_path', 'text')
        .addColumn('docker_context', 'text')
        .addColumn('allow_deploy_paths', 'text', (c) => c.notNull())
        .addColumn('ignore_deploy_paths', 'text', (c) => c.notNull())
        .addColumn('buildpacks', 'text', (c) => c.notNull())
        .addColumn('docker_registry_credential_id', 'varchar(36)')
        .addColumn('git_lfs_enabled', 'integer', (c) => c.notNull())
        .addColumn('temp_domain', 'text', (c) => c.notNull())
        .addColumn('hook_token', 'varchar(128)')
        .addColumn('created_by', 'text')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('applications_company').on('applications').columns(['company_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('applications_name').on('applications').columns(['company_id', 'name']).unique().execute();
      await db.schema.createIndex('applications_hook').on('applications').column('hook_token').unique().execute();
    },
  },
  '011_deployments': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('deployments')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('app_id', 'varchar(36)', (c) => c.notNull().references('applications.id').onDelete('cascade'))
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('trigger', 'varchar(32)', (c) => c.notNull())
        .addColumn('steps', 'text', (c) => c.notNull())
        .addColumn('phase', 'varchar(32)')
        .addColumn('phase_started_at', 'varchar(32)')
        .addColumn('reads', 'integer', (c) => c.notNull())
        .addColumn('docker_image_url', 'text')
        .addColumn('git_type', 'varchar(16)')
        .addColumn('repo_url', 'text')
        .addColumn('branch', 'text')
        .addColumn('commit_sha', 'varchar(64)')
        .addColumn('commit_message', 'text')
        .addColumn('author_login', 'text')
        .addColumn('author_img', 'text')
        .addColumn('build_of', 'varchar(36)')
        .addColumn('is_restart', 'integer', (c) => c.notNull())
        .addColumn('initiated_by', 'text')
        .addColumn('started_at', 'varchar(32)')
        .addColumn('finished_at', 'varchar(32)')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('deployments_app').on('deployments').columns(['app_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('deployments_app_status').on('deployments').columns(['app_id', 'status']).execute();
    },
  },
  /** The company's application count and list version, kept by triggers (src/shared/pagination.ts). */
  '192_applications_counted': {
    up: (db: Kysely<any>) => countedTable(db, 'applications'),
  },
  /**
   * The active deployments (waiting or in progress) indexed on their own (see ACTIVE_STATUSES),
   * in place of an index of every deployment by application and status: a deployment's status
   * changes move it out of the partial index, and the lookups of the active ones read only those.
   */
  '204_applications_active_deployments': {
    async up(db: Kysely<any>) {
      await db.schema
        .createIndex('deployments_active')
        .on('deployments')
        .columns(['app_id', 'status'])
        .where(sql<boolean>`status IN ('waiting', 'inProgress')`)
        .execute();
      await db.schema.dropIndex('deployments_app_status').execute();
    },
  },
};

/** Tables of this area, children first (for reset). */
export const tables = ['deployments', 'applications'] as const;

const appOfCompany = reusable((db, p: { id: string; companyId: string }) =>
  db.selectFrom('applications').selectAll().where('id', '=', p.id).where('company_id', '=', p.companyId),
);

/** The company's application `id` (undefined when it has none by that id), also while it is being deleted. */
export async function appOfCompanyById(tx: Tx, companyId: string, id: string): Promise<ApplicationsTable | undefined> {
  return first(tx, appOfCompany(tx, { id, companyId }));
}

/** The statuses of a deployment that is not final yet. */
export const ACTIVE = ['waiting', 'inProgress'] as const;

/**
 * ACTIVE written into a statement (`status IN ('waiting', 'inProgress')`), not sent as parameters:
 * it is the predicate of the partial index `deployments_active`, and a planner takes a partial
 * index only for a condition that states its predicate: PostgreSQL proves it from the values
 * written, never from parameters; SQLite needs it word for word, so a lookup of one active status
 * states both (`status IN (...) AND status = ?`). Through that index a lookup of an application's
 * active deployments reads those, not the index entries its finished deployments left behind on
 * their way out: with an index of every deployment by status, PostgreSQL's planner took a bitmap
 * scan that visited the heap page of each superseded deployment's earlier `waiting` version.
 */
export const ACTIVE_STATUSES = ACTIVE.map((s) => sql.lit(s));

/** An active deployment as the start of a new one reads it (see appWithActive). */
export interface ActiveDeployment {
  id: string;
  status: (typeof ACTIVE)[number];
  created_at: string;
}

/** An application with its active deployments, a row for each (see appWithActive). */
export const appAndActive = reusable((db, p: { id: string; companyId: string }) =>
  db
    .selectFrom('applications')
    .leftJoin('deployments', (j) => j.onRef('deployments.app_id', '=', 'applications.id').on('deployments.status', 'in', ACTIVE_STATUSES))
    .selectAll('applications')
    .select(['deployments.id as active_id', 'deployments.status as active_status', 'deployments.created_at as active_created_at'])
    .where('applications.id', '=', p.id)
    .where('applications.company_id', '=', p.companyId),
);

/**
 * The company's application `id` and its active deployments (waiting or in progress) in one
 * statement; undefined when the company has no application by that id.
 */
export async function appOfCompanyWithActive(
  tx: Tx,
  companyId: string,
  id: string,
): Promise<{ app: ApplicationsTable; active: ActiveDeployment[] } | undefined> {
  const rows = await all(tx, appAndActive(tx, { id, companyId }));
  if (!rows.length) return undefined;
  const { active_id: _id, active_status: _status, active_created_at: _created, ...app } = rows[0]!;
  const active: ActiveDeployment[] = [];
  for (const r of rows)
    if (r.active_id) active.push({ id: r.active_id, status: r.active_status as ActiveDeployment['status'], created_at: r.active_created_at! });
  return { app, active };
}

const appOfId = reusable((db, p: { id: string }) => db.selectFrom('applications').selectAll().where('id', '=', p.id));

/** An application by id whatever its company (background work that starts from its own rows). */
export async function appById(tx: Tx, id: string): Promise<ApplicationsTable | undefined> {
  return first(tx, appOfId(tx, { id }));
}

const deploymentOfId = reusable((db, p: { id: string }) => db.selectFrom('deployments').selectAll().where('id', '=', p.id));

/** An application and a deployment by id (either may be gone), read together (one round trip in a transaction on PostgreSQL). */
export async function appAndDeployment(tx: Tx, appId: string, deploymentId: string): Promise<[ApplicationsTable | undefined, DeploymentsTable | undefined]> {
  const [apps, deployments] = await together(tx, [appOfId(tx, { id: appId }), deploymentOfId(tx, { id: deploymentId })]);
  return [apps![0] as ApplicationsTable | undefined, deployments![0] as DeploymentsTable | undefined];
}

/** The columns of an application in a list. */
const LISTED = ['id', 'name', 'display_name', 'status', 'type', 'source', 'is_suspended', 'created_at', 'updated_at'] as const;

/**
 * A page of the company's applications (those of `scope` when given); without a scope the page is
 * the counted list's (trigger-kept total, cached by content version `asOf`).
 */
export async function listAppsPage(tx: Tx, companyId: string, scope: Scope, asOf: string | undefined, page: Page) {
  const q = () => {
    const all = tx.selectFrom('applications').select(LISTED).where('company_id', '=', companyId);
    return scope ? all.where('id', 'in', scope.size ? [...scope] : ['']) : all;
  };
  return paginate(q, page, undefined, scope ? undefined : { tx, table: 'applications', companyId, asOf, columns: LISTED });
}

/**
 * Inserts an application under a name derived from its display name, unique in the company even
 * under concurrent creates (the unique index decides); `build` gives the row for a name.
 */
export function insertNamedApp(tx: Tx, companyId: string, displayName: string, build: (name: string) => ApplicationsTable): Promise<ApplicationsTable> {
  return insertNamed(tx, 'applications', companyId, displayName, build);
}

/** Writes `changes` to the application and answers the row as written. */
export async function updateAppColumns(tx: Tx, id: string, changes: Partial<Omit<ApplicationsTable, 'id'>>): Promise<ApplicationsTable> {
  return tx.updateTable('applications').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function setAppSuspended(tx: Tx, id: string, isSuspended: number, at: string): Promise<void> {
  await tx.updateTable('applications').set({ is_suspended: isSuspended, updated_at: at }).where('id', '=', id).execute();
}

export async function setAppProjectId(tx: Tx, id: string, projectId: string | null, at: string): Promise<void> {
  await tx.updateTable('applications').set({ project_id: projectId, updated_at: at }).where('id', '=', id).execute();
}

/** Sets the deployment hook's token (null: the hook is disabled). */
export async function setHookToken(tx: Tx, id: string, token: string | null, at: string): Promise<void> {
  await tx.updateTable('applications').set({ hook_token: token, updated_at: at }).where('id', '=', id).execute();
}

/** The application whose deployment hook has `token`, whatever its company. */
export async function appByHookToken(tx: Tx, token: string): Promise<ApplicationsTable | undefined> {
  return tx.selectFrom('applications').selectAll().where('hook_token', '=', token).executeTakeFirst();
}

/**
 * The git applications that deploy on push (auto_deploy, not preview apps, not being deleted): of
 * one company, or of all (the git poller). Preview apps follow their pull request instead. With
 * `includeOff`, those with auto_deploy off too (a push's delivery names them, saying why nothing deployed).
 */
export async function autoDeployAppRows(tx: Tx, companyId?: string, o: { includeOff?: boolean } = {}): Promise<ApplicationsTable[]> {
  let q = tx
    .selectFrom('applications')
    .selectAll()
    .where('type', '=', 'app')
    .where('source', 'in', ['privateGit', 'publicGit'])
    .where((eb) => eb.or([eb('status', 'is', null), eb('status', 'not in', ['deleting', 'appDeletionFailed'])]));
  if (!o.includeOff) q = q.where('auto_deploy', '=', 1);
  if (companyId) q = q.where('company_id', '=', companyId);
  return q.execute();
}

/** Sets the status of an application's deletion (`deleting`, or `appDeletionFailed`). */
export async function setAppDeletionStatus(tx: Tx, id: string, status: 'deleting' | 'appDeletionFailed', at: string): Promise<void> {
  await tx.updateTable('applications').set({ status, updated_at: at }).where('id', '=', id).execute();
}

/** Removes the application's row (what references it with ON DELETE CASCADE goes with it). */
export async function deleteAppRow(tx: Tx, id: string): Promise<void> {
  await tx.deleteFrom('applications').where('id', '=', id).execute();
}

/** The id, names and cluster of the company's applications among `ids` (the service registry's summaries). */
export function appSummaryRows(tx: Tx, companyId: string, ids: readonly string[]) {
  return tx
    .selectFrom('applications')
    .select(['id', 'name', 'display_name', 'cluster_id'])
    .where('id', 'in', ids)
    .where('company_id', '=', companyId)
    .execute();
}
