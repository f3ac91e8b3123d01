// The moments of a static site's life that other modules react to, in the same transaction
// (`app.events.signal` / `app.events.on`, src/shared/events.ts). Never recorded or delivered as
// webhook events. The env-vars module removes the site's variables on `static-site.removed`; the
// domains module registers the site's hostnames on `static-site.created` and removes them on removal.
import type { StaticSitesTable } from './storage.js';

declare module '../../shared/events.js' {
  interface SignalMap {
    /** The static site was created (its names are registered with the domains module). */
    'static-site.created': { site: StaticSitesTable };
    /** The static site is being removed for good (the deletion job, after the runtime tore it down). */
    'static-site.removed': { site: StaticSitesTable };
  }
}

export {};
