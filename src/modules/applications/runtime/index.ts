// Chooses the applications runtime once, at setup, from SLIPWAY_RUNTIME: `local` runs applications
// as supervised host processes behind the edge (`local/`), `container` as containers of the engine
// at DOCKER_HOST (`container/`), `swarm` as services of a Docker Swarm (`swarm/`), anything else
// simulates them (`simulated/`). A new driver is a new folder implementing `ApplicationsRuntime` and
// one line here.
import type { AppContext } from '../../../shared/context.js';
import { setupContainerRuntime } from './container/index.js';
import { setupLocalRuntime } from './local/index.js';
import { simulatedApplications } from './simulated/index.js';
import { setupSwarmRuntime } from './swarm/index.js';

export type { ApplicationsRuntime, RunExit } from './driver.js';

const drivers = { local: setupLocalRuntime, container: setupContainerRuntime, swarm: setupSwarmRuntime, simulated: simulatedApplications };

export function setupApplicationsRuntime(app: AppContext): void {
  app.runtimes.applications = drivers[app.config.runtime](app);
}
