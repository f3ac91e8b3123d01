// Queries on the deployments of static sites (and on the site's status, which follows its
// production deployments), and the lock of a lane that every change to the lane takes first.
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { paginate, type Page } from '../../shared/pagination.js';
import { PRODUCTION, type SiteStatus, type StaticSiteDeploymentsTable } from './storage.js';

/** The statuses of a deployment that is not final yet. */
const ACTIVE = ['waiting', 'inProgress'] as const;

/** Serializes the changes to one lane of a site's deployments (start, finish), across processes. */
export async function lockLane(tx: Tx, siteId: string, lane: string): Promise<void> {
  await lockFor(tx, `static-site-deployments:${siteId}:${lane}`);
}

/** The status of the site's latest production deployment that was not skipped. */
export async function latestProductionStatus(tx: Tx, siteId: string): Promise<{ status: StaticSiteDeploymentsTable['status'] } | undefined> {
  return tx
    .selectFrom('static_site_deployments')
    .select('status')
    .where('static_site_id', '=', siteId)
    .where('lane', '=', PRODUCTION)
    .where('status', '!=', 'skipped')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Sets the site's status, unless it is being deleted (or failed to be). */
export async function setSiteStatus(tx: Tx, siteId: string, status: SiteStatus): Promise<void> {
  await tx
    .updateTable('static_sites')
    .set({ status })
    .where('id', '=', siteId)
    .where((eb) => eb.or([eb('status', 'is', null), eb('status', 'not in', ['deleting', 'deletionFailed'])]))
    .execute();
}

/** One deployment of the lane that is waiting or in progress, if any. */
export async function activeInLane(tx: Tx, siteId: string, lane: string): Promise<{ id: string } | undefined> {
  return tx
    .selectFrom('static_site_deployments')
    .select('id')
    .where('static_site_id', '=', siteId)
    .where('lane', '=', lane)
    .where('status', 'in', [...ACTIVE])
    .executeTakeFirst();
}

export async function insertDeployment(tx: Tx, row: StaticSiteDeploymentsTable): Promise<void> {
  await tx.insertInto('static_site_deployments').values(row).execute();
}

/** The site's deployments that are waiting or in progress, oldest first. */
export async function activeDeploymentRows(tx: Tx, siteId: string): Promise<StaticSiteDeploymentsTable[]> {
  return tx
    .selectFrom('static_site_deployments')
    .selectAll()
    .where('static_site_id', '=', siteId)
    .where('status', 'in', [...ACTIVE])
    .orderBy('created_at')
    .execute();
}

/** The ids of the lane's waiting deployments. */
export async function waitingInLane(tx: Tx, siteId: string, lane: string): Promise<string[]> {
  const waiting = await tx
    .selectFrom('static_site_deployments')
    .select('id')
    .where('static_site_id', '=', siteId)
    .where('lane', '=', lane)
    .where('status', '=', 'waiting')
    .execute();
  return waiting.map((w) => w.id);
}

/**
 * A deployment of the lane ahead of deployment `id` (created at `createdAt`), if any: one in
 * progress, or one waiting that was created before it (ties by id).
 */
export async function deploymentAhead(tx: Tx, siteId: string, lane: string, id: string, createdAt: string): Promise<{ id: string } | undefined> {
  return tx
    .selectFrom('static_site_deployments')
    .select('id')
    .where('static_site_id', '=', siteId)
    .where('lane', '=', lane)
    .where('id', '!=', id)
    .where((eb) =>
      eb.or([
        eb('status', '=', 'inProgress'),
        eb.and([eb('status', '=', 'waiting'), eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', id)])])]),
      ]),
    )
    .executeTakeFirst();
}

/** A page of the site's deployments, newest first. */
export async function listDeploymentsPage(tx: Tx, siteId: string, page: Page) {
  return paginate(tx.selectFrom('static_site_deployments').selectAll().where('static_site_id', '=', siteId), page, {
    column: 'created_at',
    id: 'id',
    direction: 'desc',
  });
}

/** The site's deployment `id`, if it is one of the site's. */
export async function siteDeployment(tx: Tx, siteId: string, id: string): Promise<StaticSiteDeploymentsTable | undefined> {
  return tx.selectFrom('static_site_deployments').selectAll().where('id', '=', id).where('static_site_id', '=', siteId).executeTakeFirst();
}

/** A deployment by id, whatever its site. */
export async function deploymentById(tx: Tx, id: string): Promise<StaticSiteDeploymentsTable | undefined> {
  return tx.selectFrom('static_site_deployments').selectAll().where('id', '=', id).executeTakeFirst();
}

/** When the site's first successful production deployment finished (null or undefined: none did). */
export async function firstProductionFinishedAt(tx: Tx, siteId: string): Promise<string | null | undefined> {
  const first = await tx
    .selectFrom('static_site_deployments')
    .select('finished_at')
    .where('static_site_id', '=', siteId)
    .where('lane', '=', PRODUCTION)
    .where('status', '=', 'success')
    .orderBy('finished_at')
    .limit(1)
    .executeTakeFirst();
  return first?.finished_at;
}

/** Removes the site's deployments (its deletion). */
export async function deleteSiteDeployments(tx: Tx, siteId: string): Promise<void> {
  await tx.deleteFrom('static_site_deployments').where('static_site_id', '=', siteId).execute();
}
