// Queries of the local static sites runtime: the commit a checkout found, the preview releases a
// preview host may name, and at start the sites to route and the deployments still in progress.
// They run on the database outside any request's transaction.
import type { Tx } from '../../../../shared/db/index.js';

/** Records the commit a deployment's checkout checked out. */
export async function setDeploymentCommit(db: Tx, deploymentId: string, sha: string, message: string): Promise<void> {
  await db.updateTable('static_site_deployments').set({ commit_sha: sha, commit_message: message }).where('id', '=', deploymentId).execute();
}

/** The lane and branch of the site's successful preview deployments, latest first (at most 500). */
export async function previewReleases(db: Tx, siteId: string): Promise<{ lane: string; branch: string | null }[]> {
  return db
    .selectFrom('static_site_deployments')
    .select(['lane', 'branch'])
    .where('static_site_id', '=', siteId)
    .where('is_preview', '=', 1)
    .where('status', '=', 'success')
    .orderBy('finished_at', 'desc')
    .limit(500)
    .execute();
}

/** Every site's id, company, name and hostname, oldest first: their names for the edge. */
export async function sitesToRegister(db: Tx) {
  return db.selectFrom('static_sites').select(['id', 'company_id', 'name', 'hostname']).orderBy('created_at').orderBy('id').execute();
}

/** Of the deployments `ids`, those in progress. */
export async function inProgressAmong(db: Tx, ids: string[]): Promise<string[]> {
  return (await db.selectFrom('static_site_deployments').select('id').where('id', 'in', ids).where('status', '=', 'inProgress').execute()).map((r) => r.id);
}
