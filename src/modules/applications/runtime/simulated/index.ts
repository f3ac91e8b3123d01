// The simulated applications runtime (the default): deployment phases, run lengths, metrics and
// the terminal come from the simulated runtime's progression and fault rules (`app.simulated`);
// nothing runs on the machine.
import type { AppContext } from '../../../../shared/context.js';
import { simulatedPhases } from '../../../../shared/runtime/phases.js';
import type { ApplicationsRuntime } from '../driver.js';

export function simulatedApplications(app: AppContext): ApplicationsRuntime {
  return {
    name: 'simulated',
    ...simulatedPhases(app),
    runsProcesses: false,
    startRun: () => {},
    killRun: () => {},
    usageSeries: () => null,
    openShell: (_ctx, _appId, _releaseId, spec, io) => app.simulated.openShell(spec, io),
    start: async () => {},
    stop: async () => {},
  };
}
