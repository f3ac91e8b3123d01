// Every resource module, in one list. A module contributes its operations and, optionally,
// start-up wiring (service kinds for the registry, background work) and its own tables for reset.
import type { Migration } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../shared/context.js';
import type { Operation } from '../shared/http/operation.js';
import * as accounts from './accounts/routes.js';
import * as apiKeys from './api-keys/routes.js';
import * as deviceCodes from './device-codes/routes.js';
import * as projects from './projects/routes.js';
import * as resources from './resources/routes.js';
import * as applications from './applications/routes.js';
import * as appStorage from './applications/storage.js';
import * as appSettings from './applications/settings-storage.js';
import * as staticSites from './static-sites/routes.js';
import * as processes from './processes/routes.js';
import * as envVars from './env-vars/routes.js';
import * as databases from './databases/routes.js';
import * as webhooks from './webhooks/routes.js';
import * as registryCredentials from './registry-credentials/routes.js';
import * as usageAlerts from './usage-alerts/routes.js';
import * as domains from './domains/routes.js';
import * as pipelines from './pipelines/routes.js';
import * as loadBalancers from './load-balancers/routes.js';
import * as objectStorage from './object-storage/routes.js';
import * as gitHooks from './git-hooks/routes.js';
import * as volumes from './volumes/routes.js';

export interface Module {
  name: string;
  operations: Operation[];
  /** Tables the module owns beyond the foundation's, children first (used by reset). */
  tables?: readonly string[];
  /**
   * Schema migrations of the module's tables, named `NNN_<module>_<what>`. NNN orders them globally
   * and a new migration must sort after every one already released (the migrator refuses to apply
   * one that sorts before an applied one).
   */
  migrations?: Record<string, Migration>;
  setup?(app: AppContext): void;
  /** Routes outside /v3 (e.g. public hook URLs). */
  http?(fastify: FastifyInstance, app: AppContext): void;
  /** Routes a request by its Host before routing (e.g. virtual-hosted buckets): the new URL, or undefined. */
  rewriteUrl?(app: AppContext, host: string | undefined, url: string): string | undefined;
  /** Background resources to bring up once the job engine runs, and to release when the server closes. */
  start?(app: AppContext): Promise<void>;
  stop?(app: AppContext): Promise<void>;
  /** Lines of `slipway serve`'s start banner. */
  banner?(app: AppContext): string[];
}

export const modules: Module[] = [
  { name: 'resources', operations: resources.operations },
  { name: 'accounts', operations: accounts.operations },
  { name: 'api-keys', operations: apiKeys.operations },
  { name: 'projects', operations: projects.operations, setup: projects.setup },
  { name: 'device-codes', operations: deviceCodes.operations },
  {
    name: 'applications',
    operations: applications.operations,
    tables: [...appSettings.settingsTables, ...appStorage.tables],
    migrations: { ...appStorage.migrations, ...appSettings.settingsMigrations },
    setup: applications.setup,
    http: applications.http,
    start: applications.start,
    stop: applications.stop,
    banner: applications.banner,
  },
  {
    name: 'static-sites',
    operations: staticSites.operations,
    tables: staticSites.tables,
    migrations: staticSites.migrations,
    setup: staticSites.setup,
    start: staticSites.start,
  },
  { name: 'processes', operations: processes.operations, tables: processes.tables, migrations: processes.migrations, setup: processes.setup },
  { name: 'env-vars', operations: envVars.operations, tables: envVars.tables, migrations: envVars.migrations, setup: envVars.setup },
  { name: 'volumes', operations: volumes.operations, tables: volumes.tables, migrations: volumes.migrations, setup: volumes.setup },
  {
    name: 'databases',
    operations: databases.operations,
    tables: databases.tables,
    migrations: databases.migrations,
    setup: databases.setup,
    start: databases.start,
    stop: databases.stop,
    banner: databases.banner,
  },
  { name: 'webhooks', operations: webhooks.operations, tables: webhooks.tables, migrations: webhooks.migrations, setup: webhooks.setup },
  {
    name: 'registry-credentials',
    operations: registryCredentials.operations,
    tables: registryCredentials.tables,
    migrations: registryCredentials.migrations,
    setup: registryCredentials.setup,
  },
  { name: 'usage-alerts', operations: usageAlerts.operations, tables: usageAlerts.tables, migrations: usageAlerts.migrations },
  { name: 'domains', operations: domains.operations, tables: domains.tables, migrations: domains.migrations, setup: domains.setup },
  { name: 'pipelines', operations: pipelines.operations, tables: pipelines.tables, migrations: pipelines.migrations, setup: pipelines.setup },
  {
    name: 'load-balancers',
    operations: loadBalancers.operations,
    tables: loadBalancers.tables,
    migrations: loadBalancers.migrations,
    setup: loadBalancers.setup,
    start: loadBalancers.start,
  },
  {
    name: 'object-storage',
    operations: objectStorage.operations,
    tables: objectStorage.tables,
    migrations: objectStorage.migrations,
    setup: objectStorage.setup,
    http: objectStorage.http,
    rewriteUrl: objectStorage.rewriteUrl,
  },
  {
    name: 'git-hooks',
    operations: gitHooks.operations,
    tables: gitHooks.tables,
    migrations: gitHooks.migrations,
    setup: gitHooks.setup,
    http: gitHooks.http,
    start: gitHooks.start,
  },
];

export const moduleMigrations = (): Record<string, Migration> => Object.assign({}, ...modules.map((m) => m.migrations ?? {}));

/** Every module table, later modules first and each module's children first, so deletes respect references. */
export const resetTables = (): string[] => [...modules].reverse().flatMap((m) => [...(m.tables ?? [])]);
