// Queries of the real applications drivers: a deployment's status while its phase runs, the
// commit its checkout found, the applications to route and start at start, and the serving
// applications that may hibernate. They run on the database outside any request's transaction.
import type { Tx } from '../../../shared/db/index.js';
import type { DeploymentsTable } from '../storage.js';

/** The deployment's status (committed state; undefined when it is gone). */
export async function deploymentStatus(db: Tx, deploymentId: string): Promise<{ status: DeploymentsTable['status'] } | undefined> {
  return db.selectFrom('deployments').select('status').where('id', '=', deploymentId).executeTakeFirst();
}

/** Records the commit a deployment's checkout checked out. */
export async function setDeploymentCommit(db: Tx, deploymentId: string, sha: string, message: string): Promise<void> {
  await db.updateTable('deployments').set({ commit_sha: sha, commit_message: message }).where('id', '=', deploymentId).execute();
}

/** Every application's id, company, name, cluster and temporary domain (as `hostname`), oldest first: their names for the edge. */
export async function appsToRegister(db: Tx) {
  return db
    .selectFrom('applications')
    .select(['id', 'company_id', 'name', 'cluster_id', 'temp_domain as hostname'])
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The ids of the applications that are not suspended. */
export async function activeAppIds(db: Tx): Promise<{ id: string }[]> {
  return db.selectFrom('applications').select('id').where('is_suspended', '=', 0).execute();
}

/** Of the applications `ids`, those with hibernation on and a hibernation time, with that time. */
export async function hibernatingApps(db: Tx, ids: string[]) {
  return db
    .selectFrom('applications')
    .select(['id', 'company_id', 'hibernate_after_seconds'])
    .where('id', 'in', ids)
    .where('hibernation_enabled', '=', 1)
    .where('hibernate_after_seconds', 'is not', null)
    .execute();
}
