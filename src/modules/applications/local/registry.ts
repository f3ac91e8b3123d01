// Which server runs the local runtime (kept apart from the runtime so that the deployments can
// ask for it without importing it).
import type { AppContext } from '../../../shared/context.js';
import type { LocalRuntime } from './index.js';

export const runtimes = new WeakMap<AppContext, LocalRuntime>();

/** The local runtime of a server (undefined when applications are simulated). */
export function localRuntime(app: AppContext): LocalRuntime | undefined {
  return runtimes.get(app);
}
