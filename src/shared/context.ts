// What every handler and service can reach: configuration, the database and shared services.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import type { Database } from './db/index.js';
import { createSecretBox, loadSecretKey, type SecretBox } from './crypto.js';
import type { Grants } from './auth/rbac.js';
import type { Tx } from './db/index.js';
import { EventBus } from './events.js';
import { ServiceRegistry } from './services.js';
import { JobEngine } from './jobs.js';
import { Simulation } from './runtime/simulation.js';
import { SimulatedDriver } from './runtime/driver.js';
import { counterStore, RateLimiter } from './ratelimit.js';
import { KeyCache } from './auth/keycache.js';
import type { Edge } from './edge/index.js';
import { createEdge } from './edge/drivers.js';

/**
 * The runtime drivers, one slot per service kind (applications and their processes, static sites,
 * databases, object storage), declared by each module next to its interface (declaration merging,
 * like `SignalMap`), and the edge that serves them over HTTP.
 */
export interface Runtimes {
  /**
   * The HTTP edge serving applications, static sites, load balancers and bucket CDNs
   * (SLIPWAY_RUNTIME=local only): the `node` driver (`Edge`) or the `nginx` one (edge/drivers.ts).
   */
  edge: Edge | null;
}

/**
 * What a module needs from a module built on top of it, declared by the module that asks (next
 * to its use, by declaration merging) and provided by the module that answers in its setup(): the
 * dependency between the two modules then runs one way only.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface Ports {}

export interface AppContext {
  config: Config;
  database: Database;
  secrets: SecretBox;
  services: ServiceRegistry;
  log: FastifyBaseLogger;
  jobs: JobEngine;
  /** Progression and fault rules of the simulated runtime (shared through the database). */
  simulation: Simulation;
  /** The simulated runtime's phases, metric series and shells: what the simulated drivers and simulated operations use. */
  simulated: SimulatedDriver;
  /** The driver of each service kind that has a runtime, chosen once at start (each module's setup fills its slot). */
  runtimes: Runtimes;
  /** Answers modules get from the modules built on them (filled by the answering modules' setup). */
  ports: Ports;
  limiter: RateLimiter;
  /** API keys presented by requests, kept until they or their company change. */
  keys: KeyCache;
  /** Webhook events and in-transaction signals between modules. */
  events: EventBus;
  /** The base URL clients reach this server on (without /v3). */
  baseUrl: string;
}

/** Builds the shared services around a configuration and an open database. */
export function createAppContext(config: Config, database: Database, log: FastifyBaseLogger, baseUrl: string): AppContext {
  const simulation = new Simulation(database, config.simulation.progression, config.simulation.faults);
  return {
    config,
    database,
    secrets: createSecretBox(loadSecretKey(config.secretKey, config.dataDir)),
    services: new ServiceRegistry(),
    log,
    jobs: new JobEngine(database, log, config.jobs),
    simulation,
    simulated: new SimulatedDriver(simulation),
    // Filled by the modules' setup(), before anything runs.
    runtimes: { edge: config.realRuntime ? createEdge(config, log, database) : null } as Runtimes,
    ports: {} as Ports,
    limiter: new RateLimiter(counterStore(config, database.db), config.rateLimits),
    keys: new KeyCache(database, config.databaseUrl),
    events: new EventBus(),
    baseUrl,
  };
}

/** Resource ids a key may see when its permission is scoped to particular resources; null = all. */
export type Scope = Set<string> | null;

/**
 * The one first argument of every service function: who asks, for which company, within which
 * transaction. Route handlers pass their request context (which extends it); background work
 * builds one with `systemCall`. Then come the resource id(s), then the input.
 */
export interface CallContext {
  /** The application context: configuration, database, jobs, events, runtime. */
  app: AppContext;
  /** The request's transaction for writes (the plain database for reads). */
  tx: Tx;
  companyId: string;
  /** Who acts: the API key's id, or null for the system (jobs, deployment hooks, the operator). */
  actor: string | null;
  /** The resource ids the key's permission is limited to, for list operations; null = all. */
  scope: Scope;
  /** What the acting key may do (a key hands out only what it holds); null for the system. */
  grants: Grants | null;
  /**
   * SQLite: the database's content version when the request arrived (db/content-version.ts).
   * A cache of query results may answer a read as of it: nothing it must see committed later.
   */
  asOf?: string;
}

/** A call made by the system itself (a job, a hook, the operator) for a company. */
export function systemCall(app: AppContext, tx: Tx, companyId: string): CallContext {
  return { app, tx, companyId, actor: null, scope: null, grants: null };
}
