// What every handler and service can reach: configuration, the database and shared services.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import type { Database } from './db/index.js';
import type { SecretBox } from './crypto.js';
import type { ServiceRegistry } from './services.js';

export interface AppContext {
  config: Config;
  database: Database;
  secrets: SecretBox;
  services: ServiceRegistry;
  log: FastifyBaseLogger;
  /** The base URL clients reach this server on (without /v3). */
  baseUrl: string;
}
