// The source of a real build: the deployment's build directory, the application's build cache,
// and the checkout (`git clone` of the repository at the deployment's branch), shared by the
// local and container hosts.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { cloneBranch, type BuildLog } from '../../../shared/runtime/build.js';

export interface BuildSpec {
  appId: string;
  deploymentId: string;
  /** The repository (null for an image source). */
  repoUrl: string | null;
  branch: string;
  /** Build-time environment (resolved variables). */
  env: Record<string, string>;
  timeoutMs: number;
  /** Writes build log lines (streamed). */
  log: BuildLog;
  /** Aborted when the deployment is cancelled. */
  signal: AbortSignal;
  /** The application's build cache (build_cache_enabled), or null. */
  cacheDir: string | null;
  /** Git's access to a private repository (the clone's environment only). */
  access?: Record<string, string>;
}

export const buildDir = (root: string, deploymentId: string) => join(root, 'builds', deploymentId);
export const appCacheDir = (root: string, appId: string) => join(root, 'cache', appId);

/** Clones the repository into the deployment's build directory; returns the commit. */
export async function checkout(root: string, s: BuildSpec): Promise<{ sha: string; message: string }> {
  const dir = buildDir(root, s.deploymentId);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  return cloneBranch(dir, { repoUrl: s.repoUrl ?? '', branch: s.branch, log: s.log, deadline: Date.now() + s.timeoutMs, signal: s.signal, access: s.access });
}
