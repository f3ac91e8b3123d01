// Which database engines are real, and where their servers are (`SLIPWAY_DB_*`). A type with
// nothing configured keeps the simulated behaviour. Admin URLs come from the environment or from a
// file named by `<NAME>_FILE` (never from the API); they are never logged.
//
//   SLIPWAY_DB_POSTGRESQL_URL             postgres://admin:pw@host:5432/postgres   (serves postgresql)
//   SLIPWAY_DB_MYSQL_URL                  mysql://root:pw@host:3306                (serves mysql and mariadb)
//   SLIPWAY_DB_<ENGINE>_HOST / _PORT      what clients are told (internal); default: the URL's host/port
//   SLIPWAY_DB_<ENGINE>_EXTERNAL_HOST / _EXTERNAL_PORT   the same for external connections
//   SLIPWAY_DB_REDIS_BIN                  a redis-server or valkey-server binary (serves redis and valkey)
//   SLIPWAY_DB_MYSQL_INTERNAL_CLIENTS     addresses/CIDRs internal clients connect from (default: the
//                                         loopback addresses when the server is on this host, else any)
//   SLIPWAY_DB_REDIS_BIND                 address the servers listen on (default 127.0.0.1)
//   SLIPWAY_DB_REDIS_EXTERNAL_BIND        address they also listen on with external access (default 0.0.0.0)
//   SLIPWAY_DB_REDIS_HOST / _EXTERNAL_HOST   what clients are told (default: the bind address)
//   SLIPWAY_DB_REDIS_PORTS                port range of the servers, `low-high` (default 16380-16479)
import { readFileSync } from 'node:fs';
import { isIpOrCidr } from '../../../shared/net.js';
import type { DatabaseType } from '../storage.js';

/** The engine families a real server can serve. */
export type EngineFamily = 'postgresql' | 'mysql' | 'redis';

export const FAMILY: Record<DatabaseType, EngineFamily | undefined> = {
  postgresql: 'postgresql',
  mysql: 'mysql',
  mariadb: 'mysql',
  redis: 'redis',
  valkey: 'redis',
  mongodb: undefined,
};

/** Where clients are told to connect. */
export interface Endpoints {
  host: string;
  port: number;
  externalHost: string;
  externalPort: number;
}

export interface SqlSettings extends Endpoints {
  /** The admin connection URL (secret). */
  url: string;
  /** MySQL: the addresses or CIDR ranges internal clients connect from (`%`: any). */
  internalClients: string[];
}

export interface RedisSettings {
  bin: string;
  bind: string;
  /** Where the servers also listen while a database's external access is on. */
  externalBind: string;
  host: string;
  externalHost: string;
  ports: [number, number];
}

export interface RuntimeSettings {
  postgresql?: SqlSettings;
  mysql?: SqlSettings;
  redis?: RedisSettings;
}

type Env = Record<string, string | undefined>;

/** `NAME`, or the trimmed content of the file named by `NAME_FILE`. */
function secret(env: Env, name: string): string | undefined {
  if (env[name]) return env[name];
  const file = env[`${name}_FILE`];
  if (!file) return undefined;
  try {
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch (e) {
    throw new Error(`${name}_FILE: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, { cause: e });
  }
}

function port(env: Env, name: string, fallback: number): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`${name} must be a port number (got "${v}")`);
  return n;
}

function sql(env: Env, engine: 'POSTGRESQL' | 'MYSQL', protocols: string[], defaultPort: number): SqlSettings | undefined {
  const name = `SLIPWAY_DB_${engine}_URL`;
  const url = secret(env, name);
  if (!url) return undefined;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    // The message must not repeat the URL: it holds the admin password.
    throw new Error(`${name} is not a valid URL`);
  }
  if (!protocols.includes(u.protocol)) throw new Error(`${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  const host = env[`SLIPWAY_DB_${engine}_HOST`] || u.hostname;
  const p = port(env, `SLIPWAY_DB_${engine}_PORT`, Number(u.port || defaultPort));
  const clients = env[`SLIPWAY_DB_${engine}_INTERNAL_CLIENTS`];
  const bad = clients?.split(',').filter((c) => c.trim() && !isIpOrCidr(c.trim()) && c.trim() !== '%');
  if (bad?.length) throw new Error(`SLIPWAY_DB_${engine}_INTERNAL_CLIENTS: not an address or CIDR range: ${bad.join(', ')}`);
  // A server on this host sees Slipway's applications come from the loopback addresses; elsewhere
  // their address is not known here, so any address counts as internal until the setting says.
  const local = ['localhost', '127.0.0.1', '::1', '[::1]'].includes(u.hostname);
  return {
    url,
    internalClients: clients
      ? clients
          .split(',')
          .map((c) => c.trim())
          .filter(Boolean)
      : local
        ? ['127.0.0.1', '::1']
        : ['%'],
    host,
    port: p,
    externalHost: env[`SLIPWAY_DB_${engine}_EXTERNAL_HOST`] || host,
    externalPort: port(env, `SLIPWAY_DB_${engine}_EXTERNAL_PORT`, p),
  };
}

export function runtimeSettings(env: Env): RuntimeSettings {
  const out: RuntimeSettings = {};
  const pg = sql(env, 'POSTGRESQL', ['postgres:', 'postgresql:'], 5432);
  if (pg) out.postgresql = pg;
  const my = sql(env, 'MYSQL', ['mysql:', 'mariadb:'], 3306);
  if (my) out.mysql = my;
  const bin = env.SLIPWAY_DB_REDIS_BIN;
  if (bin) {
    const range = env.SLIPWAY_DB_REDIS_PORTS || '16380-16479';
    const m = /^(\d+)-(\d+)$/.exec(range);
    const lo = Number(m?.[1]);
    const hi = Number(m?.[2]);
    if (!m || lo < 1 || hi > 65535 || lo > hi) throw new Error(`SLIPWAY_DB_REDIS_PORTS must be a range low-high (got "${range}")`);
    const bind = env.SLIPWAY_DB_REDIS_BIND || '127.0.0.1';
    const host = env.SLIPWAY_DB_REDIS_HOST || bind;
    out.redis = {
      bin,
      bind,
      externalBind: env.SLIPWAY_DB_REDIS_EXTERNAL_BIND || '0.0.0.0',
      host,
      externalHost: env.SLIPWAY_DB_REDIS_EXTERNAL_HOST || host,
      ports: [lo, hi],
    };
  }
  return out;
}
