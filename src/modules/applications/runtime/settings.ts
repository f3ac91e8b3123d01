// Operator settings of the real application drivers, local and container (docs/runtimes.md "Real applications"); the edge's own
// settings (port, base domain, trusted proxies) are shared: src/shared/edge/settings.ts.
import { join } from 'node:path';
import { intSetting, type Config } from '../../../shared/config.js';

export interface AppsSettings {
  /** Where builds, releases and the instance registry live (`<data dir>/apps`). */
  root: string;
  /** A build (clone, install, build) taking longer fails (SLIPWAY_APPS_BUILD_TIMEOUT_MS; default 10 minutes). */
  buildTimeoutMs: number;
  /** A new instance must accept HTTP within this, or the rollout fails (SLIPWAY_APPS_READY_TIMEOUT_MS; default 60 s). */
  readyTimeoutMs: number;
  /** After SIGTERM an instance gets this long before SIGKILL (SLIPWAY_APPS_STOP_GRACE_MS; default 10 s). */
  stopGraceMs: number;
  /** How often a running build looks whether its deployment was cancelled (SLIPWAY_APPS_CANCEL_CHECK_MS; default 500 ms). */
  cancelCheckMs: number;
  /** How often CPU and memory of the processes are sampled from /proc (SLIPWAY_APPS_METRICS_INTERVAL_MS; default 10 s). */
  metricsIntervalMs: number;
  /** Whether a stopping Slipway stops the applications' instances (SLIPWAY_APPS_STOP_ON_EXIT=1|0; default: the host's, InstanceHost.outlivesSlipway). */
  stopOnExit: boolean | undefined;
}

export function appsSettings(config: Config): AppsSettings {
  const env = config.apps.env;
  return {
    root: join(config.dataDir, 'apps'),
    buildTimeoutMs: intSetting(env, 'SLIPWAY_APPS_BUILD_TIMEOUT_MS', 10 * 60_000),
    readyTimeoutMs: intSetting(env, 'SLIPWAY_APPS_READY_TIMEOUT_MS', 60_000),
    stopGraceMs: intSetting(env, 'SLIPWAY_APPS_STOP_GRACE_MS', 10_000),
    cancelCheckMs: intSetting(env, 'SLIPWAY_APPS_CANCEL_CHECK_MS', 500),
    metricsIntervalMs: intSetting(env, 'SLIPWAY_APPS_METRICS_INTERVAL_MS', 10_000),
    stopOnExit: env.SLIPWAY_APPS_STOP_ON_EXIT === undefined || env.SLIPWAY_APPS_STOP_ON_EXIT === '' ? undefined : env.SLIPWAY_APPS_STOP_ON_EXIT === '1',
  };
}
