// The static sites area's webhook events (src/shared/events.ts, docs/events.md). `data` is the
// site's representation as GET /static-sites/{id} returns it; STATIC_SITE_DEPLOY adds
// `deployment` (as the deployments list shows it).
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { deploymentById } from './deployments-storage.js';
import { siteById, type StaticSitesTable } from './storage.js';
import { deploymentListView, siteView } from './views.js';

declare module '../../shared/events.js' {
  interface EventMap {
    /** The inserted row. */
    STATIC_SITE_CREATE: StaticSitesTable;
    /** The row (the payload reads the current one). */
    STATIC_SITE_UPDATE: StaticSitesTable;
    /** The row as it was last stored, just before its removal. */
    STATIC_SITE_DELETE: StaticSitesTable;
    /** A deployment that reached a final status. */
    STATIC_SITE_DEPLOY: { siteId: string; deploymentId: string };
  }
}

/** The current row, or the given one (e.g. a row that was just deleted). */
const current = async (tx: Tx, s: StaticSitesTable) => (await siteById(tx, s.id)) ?? s;

export function registerStaticSiteEvents(app: AppContext): void {
  const module = 'static-sites';
  app.events.source({
    type: 'STATIC_SITE_CREATE',
    module,
    operations: ['createStaticSiteV3'],
    when: 'when the static site row is inserted (with its initial deployment queued), in the same transaction',
    payload: async (tx, s) => siteView(await current(tx, s)),
  });
  app.events.source({
    type: 'STATIC_SITE_UPDATE',
    module,
    operations: ['updateStaticSiteV3'],
    when: 'when the update is stored',
    payload: async (tx, s) => siteView(await current(tx, s)),
  });
  app.events.source({
    type: 'STATIC_SITE_DELETE',
    module,
    operations: ['deleteStaticSiteV3'],
    when: 'when deletion completes (the site, its deployments, variables and logs are gone); a failed deletion emits nothing',
    payload: (_tx, s) => siteView(s),
  });
  app.events.source({
    type: 'STATIC_SITE_DEPLOY',
    module,
    operations: ['createStaticSiteV3', 'deployStaticSiteV3', 'cancelStaticSiteDeploymentV3', 'deleteStaticSiteV3'],
    when: 'when a deployment (production or preview) reaches a final status: success, failed or cancelled (also the initial deployment of a new site and those cancelled by a deletion); not when it starts',
    payload: async (tx, { siteId, deploymentId }) => {
      const s = await siteById(tx, siteId);
      const d = await deploymentById(tx, deploymentId);
      return { ...(s ? siteView(s) : { id: siteId }), deployment: d ? deploymentListView(d) : { id: deploymentId } };
    },
  });
}
