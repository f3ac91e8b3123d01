// Operator settings of the local application runtime (README "Real applications").
import { join } from 'node:path';
import type { Config } from '../../../shared/config.js';

export interface LocalSettings {
  /** Where builds, releases and the instance registry live (`<data dir>/apps`). */
  root: string;
  /** Port of the HTTP edge (SLIPWAY_EDGE_PORT; 0 = any free port; default 8000). */
  edgePort: number;
  /** Address the edge binds (SLIPWAY_EDGE_HOST; default the API's host). */
  edgeHost: string;
  /** Applications are reached at `<name>.<baseDomain>` (SLIPWAY_BASE_DOMAIN; default localhost). */
  baseDomain: string;
  /** Addresses or CIDR ranges whose X-Forwarded-For the edge believes (SLIPWAY_EDGE_TRUSTED_PROXIES, comma-separated). */
  trustedProxies: string[];
  /** A build (clone, install, build) taking longer fails (SLIPWAY_APPS_BUILD_TIMEOUT_MS; default 10 minutes). */
  buildTimeoutMs: number;
  /** A new instance must accept HTTP within this, or the rollout fails (SLIPWAY_APPS_READY_TIMEOUT_MS; default 60 s). */
  readyTimeoutMs: number;
  /** After SIGTERM an instance gets this long before SIGKILL (SLIPWAY_APPS_STOP_GRACE_MS; default 10 s). */
  stopGraceMs: number;
}

export function localSettings(config: Config): LocalSettings {
  const env = config.apps.env;
  const int = (name: string, d: number, min = 1) => {
    const v = env[name];
    if (v === undefined || v === '') return d;
    if (!/^\d+$/.test(v) || Number(v) < min) throw new Error(`${name} must be an integer >= ${min} (got "${v}")`);
    return Number(v);
  };
  return {
    root: join(config.dataDir, 'apps'),
    edgePort: int('SLIPWAY_EDGE_PORT', 8000, 0),
    edgeHost: env.SLIPWAY_EDGE_HOST || config.host,
    baseDomain: (env.SLIPWAY_BASE_DOMAIN || 'localhost').toLowerCase(),
    trustedProxies: (env.SLIPWAY_EDGE_TRUSTED_PROXIES ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
    buildTimeoutMs: int('SLIPWAY_APPS_BUILD_TIMEOUT_MS', 10 * 60_000),
    readyTimeoutMs: int('SLIPWAY_APPS_READY_TIMEOUT_MS', 60_000),
    stopGraceMs: int('SLIPWAY_APPS_STOP_GRACE_MS', 10_000),
  };
}
