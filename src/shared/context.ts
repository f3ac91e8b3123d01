// What every handler and service can reach: configuration, the database and shared services.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import type { Database } from './db/index.js';
import { createSecretBox, loadSecretKey, type SecretBox } from './crypto.js';
import { ServiceRegistry } from './services.js';
import { JobEngine } from './jobs.js';
import { Simulation } from './runtime/simulation.js';
import { SimulatedDriver, type RuntimeDriver } from './runtime/driver.js';
import { RateLimiter } from './ratelimit.js';

export interface AppContext {
  config: Config;
  database: Database;
  secrets: SecretBox;
  services: ServiceRegistry;
  log: FastifyBaseLogger;
  jobs: JobEngine;
  /** Progression and fault rules of the simulated runtime (shared through the database). */
  simulation: Simulation;
  runtime: RuntimeDriver;
  limiter: RateLimiter;
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
    runtime: new SimulatedDriver(simulation),
    limiter: new RateLimiter(database.db, config.rateLimits),
    baseUrl,
  };
}
