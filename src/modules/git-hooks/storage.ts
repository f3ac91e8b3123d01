// Tables of the git hooks area: each company's webhook secret (sealed at rest), the deliveries
// received (the latest DELIVERIES_KEPT per company), the last head seen per repository and
// branch (shared by webhooks and the poller, so a push seen by both deploys once), and the access
// tokens of private repositories (sealed at rest; credentials.ts). Also the migrations and every
// query of the area.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Tx } from '../../shared/db/index.js';
import { paginate, type Page } from '../../shared/pagination.js';

export interface GitHookSecretsTable {
  company_id: string;
  /** The secret, sealed with the server's secret box. */
  secret: string;
  created_at: string;
  updated_at: string;
}

export interface GitDeliveriesTable {
  id: string;
  company_id: string;
  provider: string;
  /** The provider's event name (`push`, `Push Hook`, `repo:push`, `pull_request`, ...), or `poll`. */
  event: string;
  /** The provider's delivery id; a second delivery with the same id is acknowledged and ignored. */
  delivery_id: string;
  /** `deployed` (it triggered something) or `ignored` (nothing to do; the message says why). */
  result: string;
  message: string;
  /** JSON: [{service_type, service_id, deployment_id?, action}]. */
  triggered: string;
  /** The ids of the services it concerned, space separated (the list's filter by service). */
  service_ids: string;
  created_at: string;
}

export interface GitHeadsTable {
  company_id: string;
  /** The normalised repository (repo.ts). */
  repo: string;
  branch: string;
  sha: string;
  updated_at: string;
}

export interface GitRepoCredentialsTable {
  id: string;
  company_id: string;
  /** The normalised repository (repo.ts): one credential per company and repository. */
  repo: string;
  /** The address as given. */
  repo_url: string;
  username: string;
  /** The access token, sealed with the server's secret box; never answered. */
  token: string;
  created_at: string;
  updated_at: string;
}

/** A repository the poller cannot reach for a company, since its first failure (cleared when it recovers). */
export interface GitPollFailuresTable {
  company_id: string;
  /** The normalised repository (repo.ts). */
  repo: string;
  /** What failed: `ls-remote` (listing the heads) or `fetch` (into the mirror). */
  stage: string;
  /** Git's answer, sanitized (mirror.ts `gitFailure`). */
  message: string;
  since: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    git_hook_secrets: GitHookSecretsTable;
    git_deliveries: GitDeliveriesTable;
    git_heads: GitHeadsTable;
    git_repo_credentials: GitRepoCredentialsTable;
    git_poll_failures: GitPollFailuresTable;
  }
}

/** Deliveries kept per company; older ones are dropped as new ones arrive. */
export const DELIVERIES_KEPT = 500;

export const migrations: Record<string, Migration> = {
  '230_git_hooks': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('git_hook_secrets')
        .addColumn('company_id', 'varchar(36)', (c) => c.primaryKey().references('companies.id').onDelete('cascade'))
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('git_deliveries')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('provider', 'varchar(16)', (c) => c.notNull())
        .addColumn('event', 'varchar(64)', (c) => c.notNull())
        .addColumn('delivery_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('result', 'varchar(16)', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('triggered', 'text', (c) => c.notNull())
        .addColumn('service_ids', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('git_deliveries_once').on('git_deliveries').columns(['company_id', 'provider', 'delivery_id']).unique().execute();
      await db.schema.createIndex('git_deliveries_company').on('git_deliveries').columns(['company_id', 'created_at', 'id']).execute();
      await db.schema
        .createTable('git_heads')
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('repo', 'text', (c) => c.notNull())
        .addColumn('branch', 'text', (c) => c.notNull())
        .addColumn('sha', 'varchar(64)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('git_heads_pk', ['company_id', 'repo', 'branch'])
        .execute();
    },
  },
  '250_git_credentials': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('git_repo_credentials')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('repo', 'text', (c) => c.notNull())
        .addColumn('repo_url', 'text', (c) => c.notNull())
        .addColumn('username', 'varchar(255)', (c) => c.notNull())
        .addColumn('token', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('git_repo_credentials_once').on('git_repo_credentials').columns(['company_id', 'repo']).unique().execute();
    },
  },
  '251_git_poll_failures': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('git_poll_failures')
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('repo', 'text', (c) => c.notNull())
        .addColumn('stage', 'varchar(16)', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('since', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('git_poll_failures_pk', ['company_id', 'repo'])
        .execute();
    },
  },
};

/** Tables of this area (for reset). */
export const tables = ['git_poll_failures', 'git_repo_credentials', 'git_heads', 'git_deliveries', 'git_hook_secrets'] as const;

export async function findSecret(tx: Tx, companyId: string): Promise<GitHookSecretsTable | undefined> {
  return tx.selectFrom('git_hook_secrets').selectAll().where('company_id', '=', companyId).executeTakeFirst();
}

/** Sets the company's secret (a first one, or a rotation); the row as written. */
export async function upsertSecret(tx: Tx, row: GitHookSecretsTable): Promise<GitHookSecretsTable> {
  return tx
    .insertInto('git_hook_secrets')
    .values(row)
    .onConflict((oc) => oc.column('company_id').doUpdateSet({ secret: row.secret, updated_at: row.updated_at }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Claims a delivery id: false when the company received it already (the unique index decides). */
export async function claimDelivery(tx: Tx, row: GitDeliveriesTable): Promise<boolean> {
  const r = await tx
    .insertInto('git_deliveries')
    .values(row)
    .onConflict((oc) => oc.columns(['company_id', 'provider', 'delivery_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return r !== undefined;
}

/** Whether a delivery id was recorded already (the claim above stays what decides). */
export async function deliveryKnown(tx: Tx, companyId: string, provider: string, deliveryId: string): Promise<boolean> {
  const r = await tx
    .selectFrom('git_deliveries')
    .select('id')
    .where('company_id', '=', companyId)
    .where('provider', '=', provider)
    .where('delivery_id', '=', deliveryId)
    .executeTakeFirst();
  return r !== undefined;
}

/** Records what a claimed delivery did. */
export async function recordDelivery(tx: Tx, id: string, set: Pick<GitDeliveriesTable, 'result' | 'message' | 'triggered' | 'service_ids'>): Promise<void> {
  await tx.updateTable('git_deliveries').set(set).where('id', '=', id).execute();
}

/** Drops the company's deliveries beyond the newest DELIVERIES_KEPT. */
export async function trimDeliveries(tx: Tx, companyId: string): Promise<void> {
  const edge = await tx
    .selectFrom('git_deliveries')
    .select(['created_at', 'id'])
    .where('company_id', '=', companyId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .offset(DELIVERIES_KEPT)
    .limit(1)
    .executeTakeFirst();
  if (!edge) return;
  await tx
    .deleteFrom('git_deliveries')
    .where('company_id', '=', companyId)
    .where((eb) => eb.or([eb('created_at', '<', edge.created_at), eb.and([eb('created_at', '=', edge.created_at), eb('id', '<=', edge.id)])]))
    .execute();
}

/** A page of the company's deliveries, newest first; those concerning `serviceId` when given. */
export async function listDeliveriesPage(tx: Tx, companyId: string, serviceId: string | undefined, page: Page) {
  let q = tx.selectFrom('git_deliveries').selectAll().where('company_id', '=', companyId);
  if (serviceId) q = q.where('service_ids', 'like', `%${serviceId}%`);
  return paginate(q, page, { column: 'created_at', id: 'id', direction: 'desc' });
}

/**
 * Records `sha` as the head of the branch; true when it is new (another head was recorded, or
 * none). A push seen by a webhook and then by the poller (or twice) passes once.
 */
export async function advanceHead(tx: Tx, companyId: string, repo: string, branch: string, sha: string): Promise<boolean> {
  const now = new Date().toISOString();
  const r = await tx
    .insertInto('git_heads')
    .values({ company_id: companyId, repo, branch, sha, updated_at: now })
    .onConflict((oc) => oc.columns(['company_id', 'repo', 'branch']).doUpdateSet({ sha, updated_at: now }).where(sql.ref('git_heads.sha'), '!=', sha))
    .returning('sha')
    .executeTakeFirst();
  return r !== undefined;
}

/** The heads recorded for a repository, per company and branch (the poller's last view). */
export async function headsOf(tx: Tx, repo: string) {
  return tx.selectFrom('git_heads').select(['company_id', 'branch', 'sha']).where('repo', '=', repo).execute();
}

/** Sets the company's credential of a repository (a first one, or a new token); the row as written. */
export async function upsertCredential(tx: Tx, row: GitRepoCredentialsTable): Promise<GitRepoCredentialsTable> {
  return tx
    .insertInto('git_repo_credentials')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['company_id', 'repo']).doUpdateSet({ repo_url: row.repo_url, username: row.username, token: row.token, updated_at: row.updated_at }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The company's credentials, oldest first. */
export async function listCredentialsPage(tx: Tx, companyId: string, page: Page) {
  return paginate(tx.selectFrom('git_repo_credentials').selectAll().where('company_id', '=', companyId), page, {
    column: 'created_at',
    id: 'id',
    direction: 'asc',
  });
}

/** Deletes one of the company's credentials; false when it has no such one. */
export async function deleteCredential(tx: Tx, companyId: string, id: string): Promise<boolean> {
  const r = await tx.deleteFrom('git_repo_credentials').where('company_id', '=', companyId).where('id', '=', id).returning('id').executeTakeFirst();
  return r !== undefined;
}

/** The company's credential of a normalised repository. */
export async function credentialOf(tx: Tx, companyId: string, repo: string): Promise<GitRepoCredentialsTable | undefined> {
  return tx.selectFrom('git_repo_credentials').selectAll().where('company_id', '=', companyId).where('repo', '=', repo).executeTakeFirst();
}

/** Every credential of the repositories `repos` (normalised), of every company (the poller's). */
export async function credentialsOfRepos(tx: Tx, repos: string[]): Promise<GitRepoCredentialsTable[]> {
  if (!repos.length) return [];
  return tx.selectFrom('git_repo_credentials').selectAll().where('repo', 'in', repos).execute();
}

/**
 * Records that polling the repository fails for the company; true when it did not fail before
 * (the first failure: the one that is told), false while it keeps failing.
 */
export async function markPollFailure(tx: Tx, row: GitPollFailuresTable): Promise<boolean> {
  const r = await tx
    .insertInto('git_poll_failures')
    .values(row)
    .onConflict((oc) => oc.columns(['company_id', 'repo']).doNothing())
    .returning('since')
    .executeTakeFirst();
  return r !== undefined;
}

/**
 * Clears the company's failure of the repository once `stage` worked again (a working `ls-remote`
 * clears an `ls-remote` failure only; a working fetch clears either); the failure cleared, if any.
 */
export async function clearPollFailure(tx: Tx, companyId: string, repo: string, stage: 'ls-remote' | 'fetch'): Promise<GitPollFailuresTable | undefined> {
  let q = tx.deleteFrom('git_poll_failures').where('company_id', '=', companyId).where('repo', '=', repo);
  if (stage === 'ls-remote') q = q.where('stage', '=', 'ls-remote');
  return q.returningAll().executeTakeFirst();
}

/** Every recorded poll failure (few: one per failing repository and company). */
export async function pollFailures(tx: Tx): Promise<GitPollFailuresTable[]> {
  return tx.selectFrom('git_poll_failures').selectAll().execute();
}

/** Forgets a poll failure (its repository is no longer watched by that company). */
export async function forgetPollFailure(tx: Tx, companyId: string, repo: string): Promise<void> {
  await tx.deleteFrom('git_poll_failures').where('company_id', '=', companyId).where('repo', '=', repo).execute();
}
