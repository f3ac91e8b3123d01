// Operator settings of real static sites (docs/runtimes.md "Real static sites"); the edge's own settings
// (port, base domain, cache size) are shared: src/shared/edge/settings.ts.
import { join } from 'node:path';
import { intSetting, type Config } from '../../../../shared/config.js';

export interface SiteSettings {
  /** Where builds and releases live (`<data dir>/static-sites`). */
  root: string;
  /** A build (clone, install, build, publish) taking longer fails (SLIPWAY_SITES_BUILD_TIMEOUT_MS; default 10 minutes). */
  buildTimeoutMs: number;
}

export function siteSettings(config: Config): SiteSettings {
  return {
    root: join(config.dataDir, 'static-sites'),
    buildTimeoutMs: intSetting(config.apps.env, 'SLIPWAY_SITES_BUILD_TIMEOUT_MS', 10 * 60_000),
  };
}
