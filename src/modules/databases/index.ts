// The databases module's public entry: what other modules may use.
import { isIP } from 'node:net';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { runtimes } from './runtime/index.js';
import { runtimeState } from './runtime/state.js';
import { listServedDatabases } from './storage.js';

/** Where a company's clients are told a database is (its internal hostname and port) and where its server really listens. */
export interface InternalEndpoint {
  databaseId: string;
  host: string;
  port: number;
  listening: { host: string; port: number };
}

/** The internal endpoints of a company's databases on real servers (not those being deleted). */
export async function internalEndpoints(app: AppContext, tx: Tx, companyId: string): Promise<InternalEndpoint[]> {
  const settings = runtimes(app).settings;
  const out: InternalEndpoint[] = [];
  for (const d of await listServedDatabases(tx, companyId)) {
    const s = runtimeState(d);
    const port = Number(d.internal_port);
    if (!s || !port) continue;
    if (s.family === 'redis') {
      // Its own server on the bind address (the loopback one when bound to every address).
      const bind = settings.redis?.bind ?? '127.0.0.1';
      if (s.port)
        out.push({ databaseId: d.id, host: s.host, port, listening: { host: bind === '0.0.0.0' || bind === '::' ? '127.0.0.1' : bind, port: s.port } });
      continue;
    }
    // A shared SQL server: where Slipway's admin connection goes.
    const url = settings[s.family]?.url;
    if (!url) continue;
    const u = new URL(url);
    out.push({
      databaseId: d.id,
      host: s.host,
      port,
      listening: { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || (s.family === 'postgresql' ? 5432 : 3306)) },
    });
  }
  return out;
}

/** The internal hostnames the configured real engines give their databases, those that are names (not addresses). */
export function internalHostnames(app: AppContext): string[] {
  const s = runtimes(app).settings;
  const hosts = [s.postgresql?.host, s.mysql?.host, s.redis?.host].filter((h): h is string => !!h && !isIP(h) && h !== 'localhost');
  return [...new Set(hosts)];
}
