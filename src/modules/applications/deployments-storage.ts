// Queries on an application's deployments (and on the application's status, which follows them):
// the statements of the deployment trigger and of a deployment's end are built once (`reusable`),
// and the writes nobody reads the result of go through `later`.
import { later, together, type Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { all, first, insertRows, reusable } from '../../shared/db/reusable.js';
import { paginate, type Page } from '../../shared/pagination.js';
import { ACTIVE_STATUSES, type ActiveDeployment, type ApplicationsTable, type DeploymentsTable } from './storage.js';

/** The application's deployments, newest first (ties by id); the caller selects and filters. */
function newestDeployments(tx: Tx, appId: string) {
  return tx.selectFrom('deployments').where('app_id', '=', appId).orderBy('created_at', 'desc').orderBy('id', 'desc');
}

/** The current release (the newest successful deployment): restarts, promotion, the local runtime, the process terminal's environment. */
export async function currentRelease(tx: Tx, appId: string): Promise<DeploymentsTable | undefined> {
  return newestDeployments(tx, appId).selectAll().where('status', '=', 'success').limit(1).executeTakeFirst();
}

/** When the application was last deployed (its newest deployment's creation), or null. */
export async function lastDeployedAt(tx: Tx, appId: string): Promise<string | null> {
  const d = await newestDeployments(tx, appId).select('created_at').limit(1).executeTakeFirst();
  return d?.created_at ?? null;
}

/** The application's newest successful deployments, at most `limit` (rollback). */
export async function newestSuccessful(tx: Tx, appId: string, limit: number): Promise<DeploymentsTable[]> {
  return newestDeployments(tx, appId).selectAll().where('status', '=', 'success').limit(limit).execute();
}

/** The id and status of the application's latest deployment that was not skipped (rollback). */
export async function latestNotSkipped(tx: Tx, appId: string) {
  return newestDeployments(tx, appId).select(['id', 'status']).where('status', '!=', 'skipped').limit(1).executeTakeFirst();
}

const latestNotSkippedStatus = reusable((db, p: { appId: string }) =>
  newestDeployments(db, p.appId).select('status').where('status', '!=', 'skipped').limit(1),
);

/** The status of the application's latest deployment that was not skipped (the application's status follows it). */
export async function latestStatus(tx: Tx, appId: string): Promise<{ status: DeploymentsTable['status'] } | undefined> {
  return first(tx, latestNotSkippedStatus(tx, { appId }));
}

type AppStatus = NonNullable<ApplicationsTable['status']>;

/** An application's status while it is not being deleted (or failed to be) and does not have it already. */
const statusUpdate = reusable((db, p: { appId: string; status: AppStatus }) =>
  db
    .updateTable('applications')
    .set({ status: p.status })
    .where('id', '=', p.appId)
    .where((eb) => eb.or([eb('status', 'is', null), eb('status', 'not in', ['deleting', 'appDeletionFailed', p.status])])),
);

/** Sets the application's status, unless it is being deleted (or failed to be) or already has it (`later`). */
export async function setAppStatus(tx: Tx, appId: string, status: AppStatus): Promise<void> {
  await later(tx, statusUpdate(tx, { appId, status }));
}

/**
 * Serializes the changes to one application's deployments (start, supersede, finish) across
 * processes. Every writer takes this lock first, before any row lock, so they all lock in the
 * same order (a row lock on the application would be taken after deployment rows by finish()).
 */
export async function lockApp(tx: Tx, appId: string): Promise<void> {
  await lockFor(tx, `deployments:${appId}`);
}

/** The application's active deployments (exported for the test of their plans, as are the two below). */
export const activeOf = reusable((db, p: { appId: string }) =>
  db.selectFrom('deployments').select(['id', 'status', 'created_at']).where('app_id', '=', p.appId).where('status', 'in', ACTIVE_STATUSES),
);

/** A new deployment supersedes the application's waiting one. */
export const supersede = reusable((db, p: { appId: string; now: string }) =>
  db
    .updateTable('deployments')
    .set({ status: 'skipped', finished_at: p.now, updated_at: p.now })
    .where('app_id', '=', p.appId)
    .where('status', 'in', ACTIVE_STATUSES)
    .where('status', '=', 'waiting'),
);

/** The ids of the application's deployments with an active status. */
export const withStatus = reusable((db, p: { appId: string; status: ActiveDeployment['status'] }) =>
  db.selectFrom('deployments').select('id').where('app_id', '=', p.appId).where('status', 'in', ACTIVE_STATUSES).where('status', '=', p.status),
);

/** The application's active deployments (waiting or in progress). */
export async function activeDeployments(tx: Tx, appId: string) {
  return all(tx, activeOf(tx, { appId }));
}

/** Marks the application's waiting deployments skipped, finished at `now` (`later`). */
export async function skipWaiting(tx: Tx, appId: string, now: string): Promise<void> {
  await later(tx, supersede(tx, { appId, now }));
}

/** Inserts a deployment (`later`). */
export async function insertDeployment(tx: Tx, row: DeploymentsTable): Promise<void> {
  await later(tx, insertRows(tx, 'deployments', [row]));
}

/** The application's active deployments, whole rows. */
export async function activeDeploymentRows(tx: Tx, appId: string): Promise<DeploymentsTable[]> {
  return tx.selectFrom('deployments').selectAll().where('app_id', '=', appId).where('status', 'in', ACTIVE_STATUSES).execute();
}

/** One of the application's deployments with the active status `status`, if any. */
export async function deploymentWithStatus(tx: Tx, appId: string, status: ActiveDeployment['status']): Promise<{ id: string } | undefined> {
  return first(tx, withStatus(tx, { appId, status }));
}

/**
 * The status of the application's latest deployment that was not skipped, and the ids of its
 * waiting deployments, read together (one round trip in a transaction on PostgreSQL).
 */
export async function latestAndWaiting(tx: Tx, appId: string): Promise<[{ status: DeploymentsTable['status'] } | undefined, string[]]> {
  const [latest, waiting] = (await together(tx, [latestNotSkippedStatus(tx, { appId }), withStatus(tx, { appId, status: 'waiting' })])) as [
    { status: DeploymentsTable['status'] }[],
    { id: string }[],
  ];
  return [latest[0], waiting.map((w) => w.id)];
}

/** A page of the application's deployments. */
export async function listDeploymentsPage(tx: Tx, appId: string, page: Page) {
  return paginate(tx.selectFrom('deployments').selectAll().where('app_id', '=', appId), page);
}

/** When the application's first successful deployment finished (null or undefined: none did). */
export async function firstSuccessFinishedAt(tx: Tx, appId: string): Promise<string | null | undefined> {
  const first = await tx
    .selectFrom('deployments')
    .select('finished_at')
    .where('app_id', '=', appId)
    .where('status', '=', 'success')
    .orderBy('finished_at')
    .limit(1)
    .executeTakeFirst();
  return first?.finished_at;
}

/** Removes the application's deployments (its deletion). */
export async function deleteAppDeployments(tx: Tx, appId: string): Promise<void> {
  await tx.deleteFrom('deployments').where('app_id', '=', appId).execute();
}
