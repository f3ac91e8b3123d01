// The edge's drivers, one chosen at start (SLIPWAY_EDGE): `nginx` (nginx/driver.ts: nginx serves,
// the in-process edge is its origin) when its binary is found, else `node` (index.ts: the
// in-process edge serves the public port; development, and machines without nginx).
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Database } from '../db/index.js';
import { Edge } from './index.js';
import { NginxEdge } from './nginx/driver.js';
import { nginxBinary } from './nginx/process.js';
import { edgeSettings } from './settings.js';

/** The edge of SLIPWAY_RUNTIME=local. `SLIPWAY_EDGE=nginx` without nginx installed stops the start. */
export function createEdge(config: Config, log: FastifyBaseLogger, database: Database): Edge {
  const settings = edgeSettings(config);
  const chosen = settings.driver;
  const bin = chosen === 'node' ? null : nginxBinary();
  if (bin) return new NginxEdge(config, log, database, bin);
  if (chosen === 'nginx')
    throw new Error('SLIPWAY_EDGE=nginx, but nginx is not installed (scripts/install-edge.sh installs it; SLIPWAY_NGINX names the binary)');
  // HTTPS is served by nginx only: a setting asking for it must not quietly serve plain HTTP.
  if (settings.httpsPort !== null)
    throw new Error(`SLIPWAY_EDGE_HTTPS_PORT needs the nginx edge, but ${chosen === 'node' ? 'SLIPWAY_EDGE=node' : 'nginx is not installed'}`);
  return new Edge(config, log, database);
}
