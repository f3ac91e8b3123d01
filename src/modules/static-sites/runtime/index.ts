// Chooses the static sites runtime once, at setup, from SLIPWAY_RUNTIME: `local` builds sites on
// this machine and serves them at the edge (`local/`), anything else simulates them (`simulated/`).
import type { AppContext } from '../../../shared/context.js';
import { setupStaticRuntime } from './local/index.js';
import { simulatedStaticSites } from './simulated/index.js';

export type { StaticSitesRuntime } from './driver.js';

export function setupStaticSitesRuntime(app: AppContext): void {
  app.runtimes.staticSites = app.config.realRuntime && app.runtimes.edge ? setupStaticRuntime(app) : simulatedStaticSites(app);
}
