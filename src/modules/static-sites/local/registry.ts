// Which server runs static sites for real (kept apart from the runtime so that the deployments can
// ask for it without importing it).
import type { AppContext } from '../../../shared/context.js';
import type { StaticRuntime } from './index.js';

export const runtimes = new WeakMap<AppContext, StaticRuntime>();

/** The static site runtime of a server (undefined when static sites are simulated). */
export function staticRuntime(app: AppContext): StaticRuntime | undefined {
  return runtimes.get(app);
}
