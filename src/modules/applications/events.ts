// The application area's entries in the event mapping (src/shared/events.ts, docs/events.md).
// `data` is the application's full representation (as GET /applications/{id}) plus `location`
// (the cluster's location); APP_DEPLOY adds `deployment` (as GET .../deployments/{id}).
import type { Tx } from '../../shared/db/index.js';
import { registerEventSource } from '../../shared/events.js';
import { CLUSTER_BY_ID } from '../resources/catalog.js';
import type { ApplicationsTable } from './storage.js';
import { appDetailView } from './service.js';
import { deploymentView } from './deployments.js';

export function appEventData(a: ApplicationsTable) {
  const c = CLUSTER_BY_ID.get(a.cluster_id);
  return { ...appDetailView(a), location: c?.location ?? null };
}

/** The current row, or `fallback` (e.g. a row that was just deleted). */
const current = async (tx: Tx, a: ApplicationsTable) => (await tx.selectFrom('applications').selectAll().where('id', '=', a.id).executeTakeFirst()) ?? a;

const module = 'applications';

registerEventSource<ApplicationsTable>({
  type: 'APP_CREATE',
  module,
  operations: ['createApplicationV3', 'cloneApplicationV3'],
  when: 'when the application row is inserted (create, clone), in the same transaction',
  payload: async (tx, a) => appEventData(await current(tx, a)),
});

registerEventSource<ApplicationsTable>({
  type: 'APP_UPDATE',
  module,
  operations: ['updateApplicationV3', 'suspendApplicationV3', 'activateApplicationV3'],
  when: 'when the update, suspension or activation is stored (not for requests that change nothing, e.g. suspending a suspended app)',
  payload: async (tx, a) => appEventData(await current(tx, a)),
});

registerEventSource<ApplicationsTable>({
  type: 'APP_DELETE',
  module,
  operations: ['deleteApplicationV3'],
  when: 'when deletion completes (the application and everything it owns are gone); a failed deletion emits nothing',
  payload: (_tx, a) => appEventData(a),
});

registerEventSource<{ appId: string; deploymentId: string }>({
  type: 'APP_DEPLOY',
  module,
  operations: ['triggerDeploymentV3', 'rollbackDeploymentV3', 'cancelDeploymentV3', 'cloneApplicationV3', 'deleteApplicationV3'],
  when: 'when a deployment reaches a final status: success, failed or cancelled (also deployments started by the deployment hook, and those cancelled by a deletion); not when it starts, and `skipped` emits nothing',
  payload: async (tx, { appId, deploymentId }) => {
    const a = await tx.selectFrom('applications').selectAll().where('id', '=', appId).executeTakeFirst();
    const d = await tx.selectFrom('deployments').selectAll().where('id', '=', deploymentId).executeTakeFirst();
    return { ...(a ? appEventData(a) : { id: appId }), deployment: d ? deploymentView(d) : { id: deploymentId } };
  },
});
