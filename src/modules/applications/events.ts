// The application area's entries in the event mapping (src/shared/events.ts, docs/events.md).
// `data` is the application's full representation (as GET /applications/{id}) plus `location`
// (the cluster's location); APP_DEPLOY adds `deployment` (as GET .../deployments/{id}).
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { CLUSTER_BY_ID } from '../resources/index.js';
import { appAndDeployment, appById, type ApplicationsTable } from './storage.js';
import { appDetailView } from './service.js';
import { deploymentView } from './deployments.js';

declare module '../../shared/events.js' {
  interface EventMap {
    APP_CREATE: ApplicationsTable;
    APP_UPDATE: ApplicationsTable;
    APP_DELETE: ApplicationsTable;
    APP_DEPLOY: { appId: string; deploymentId: string };
  }
}

export function appEventData(a: ApplicationsTable) {
  const c = CLUSTER_BY_ID.get(a.cluster_id);
  return { ...appDetailView(a), location: c?.location ?? null };
}

/** The current row, or the given one (e.g. a row that was just deleted). */
const current = async (tx: Tx, a: ApplicationsTable) => (await appById(tx, a.id)) ?? a;

const module = 'applications';

/** The application area's event sources; called from the module's setup. */
export function registerApplicationEvents(app: AppContext): void {
  app.events.source({
    type: 'APP_CREATE',
    module,
    operations: ['createApplicationV3', 'cloneApplicationV3'],
    when: 'when the application row is inserted (create, clone), in the same transaction',
    payload: async (tx, a) => appEventData(await current(tx, a)),
  });

  app.events.source({
    type: 'APP_UPDATE',
    module,
    operations: ['updateApplicationV3', 'suspendApplicationV3', 'activateApplicationV3'],
    when: 'when the update, suspension or activation is stored (not for requests that change nothing, e.g. suspending a suspended app)',
    payload: async (tx, a) => appEventData(await current(tx, a)),
  });

  app.events.source({
    type: 'APP_DELETE',
    module,
    operations: ['deleteApplicationV3'],
    when: 'when deletion completes (the application and everything it owns are gone); a failed deletion emits nothing',
    payload: (_tx, a) => appEventData(a),
  });

  app.events.source({
    type: 'APP_DEPLOY',
    module,
    operations: ['triggerDeploymentV3', 'rollbackDeploymentV3', 'cancelDeploymentV3', 'cloneApplicationV3', 'deleteApplicationV3'],
    when: 'when a deployment reaches a final status: success, failed or cancelled (also deployments started by the deployment hook, and those cancelled by a deletion); not when it starts, and `skipped` emits nothing',
    payload: async (tx, { appId, deploymentId }) => {
      const [a, d] = await appAndDeployment(tx, appId, deploymentId);
      return { ...(a ? appEventData(a) : { id: appId }), deployment: d ? deploymentView(d) : { id: deploymentId } };
    },
  });
}
