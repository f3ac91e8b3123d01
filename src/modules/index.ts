// Every resource module, in one list. A module contributes its operations and, optionally,
// start-up wiring (service kinds for the registry, background work) and its own tables for reset.
import type { AppContext } from '../shared/context.js';
import type { Operation } from '../shared/http/operation.js';
import * as accounts from './accounts/routes.js';
import * as apiKeys from './api-keys/routes.js';
import * as deviceCodes from './device-codes/routes.js';
import * as projects from './projects/routes.js';
import * as resources from './resources/routes.js';

export interface Module {
  name: string;
  operations: Operation[];
  /** Tables the module owns beyond the foundation's, children first (used by reset). */
  tables?: readonly string[];
  setup?(app: AppContext): void;
}

export const modules: Module[] = [
  { name: 'resources', operations: resources.operations },
  { name: 'accounts', operations: accounts.operations },
  { name: 'api-keys', operations: apiKeys.operations },
  { name: 'projects', operations: projects.operations },
  { name: 'device-codes', operations: deviceCodes.operations },
];

export const resetTables = (): string[] => modules.flatMap((m) => [...(m.tables ?? [])]).reverse();
