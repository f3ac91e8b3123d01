// The static sites runtime: what runs a site's deployments (checkout, build, publish) and serves
// its releases. One interface, one folder per driver (`simulated/`, `local/`), one driver per
// server chosen at start from SLIPWAY_RUNTIME (`index.ts`) and reached as `app.runtimes.staticSites`.
import type { PhaseRuntime } from '../../../shared/runtime/phases.js';
import type { StaticSiteDeploymentsTable, StaticSitesTable } from '../storage.js';

export interface StaticSitesRuntime extends PhaseRuntime<StaticSiteDeploymentsTable, StaticSitesTable> {
  readonly name: 'simulated' | 'local';
  /** Stops the work of a cancelled deployment's running phase (in this process). */
  cancel(deploymentId: string): void;
  /** At start: cleans up what a stopped server left and registers what it serves. */
  start(): Promise<void>;
}

declare module '../../../shared/context.js' {
  interface Runtimes {
    staticSites: StaticSitesRuntime;
  }
}
