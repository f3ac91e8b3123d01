// The simulated static sites runtime (the default): deployment phases come from the simulated
// runtime's progression and fault rules (`app.simulated`); nothing is built or served.
import type { AppContext } from '../../../../shared/context.js';
import { simulatedPhases } from '../../../../shared/runtime/phases.js';
import type { StaticSitesRuntime } from '../driver.js';

export function simulatedStaticSites(app: AppContext): StaticSitesRuntime {
  return { name: 'simulated', ...simulatedPhases(app), cancel: () => {}, start: async () => {} };
}
