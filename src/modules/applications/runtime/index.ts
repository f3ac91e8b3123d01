// Chooses the applications runtime once, at setup, from SLIPWAY_RUNTIME: `local` runs applications
// as supervised host processes behind the edge (`local/`), anything else simulates them
// (`simulated/`). A new driver is a new folder implementing `ApplicationsRuntime` and one line here.
import type { AppContext } from '../../../shared/context.js';
import { setupLocalRuntime } from './local/index.js';
import { simulatedApplications } from './simulated/index.js';

export type { ApplicationsRuntime, RunExit } from './driver.js';

export function setupApplicationsRuntime(app: AppContext): void {
  app.runtimes.applications = app.config.runtime === 'local' ? setupLocalRuntime(app) : simulatedApplications(app);
}
