// A real driver's releases: each successful build is an immutable release, a directory
// `<root>/releases/<app>/<deployment>` holding `.slipway-release.json` (the commit, the Procfile's
// entries and, on the container host, the image tag; on the local host the built tree too).
// Rollback, restart and promotion run an earlier release without building.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface ReleaseInfo {
  commitSha: string;
  commitMessage: string;
  /** Procfile entries (process key -> command). */
  procfile: Record<string, string>;
  /** The immutable image tag of a container release. */
  image?: string;
}

/** A release as instances, runs and shells run it. */
export interface Release {
  id: string;
  dir: string;
  info: ReleaseInfo;
}

const INFO = '.slipway-release.json';

export const releaseDir = (root: string, appId: string, releaseId: string) => join(root, 'releases', appId, releaseId);
export const appReleasesDir = (root: string, appId: string) => join(root, 'releases', appId);

/** Parses a Procfile (`key: command` lines). */
export function parseProcfile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z0-9_-]+)\s*:\s*(.+)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!.trim();
  }
  return out;
}

/** Writes a release's facts into its directory (created when missing). */
export async function writeReleaseInfo(dir: string, info: ReleaseInfo): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, INFO), JSON.stringify(info));
}

/** The release, or undefined when it is not on this machine (e.g. built by the simulated runtime). */
export async function readRelease(root: string, appId: string, releaseId: string): Promise<Release | undefined> {
  const dir = releaseDir(root, appId, releaseId);
  try {
    return { id: releaseId, dir, info: JSON.parse(await readFile(join(dir, INFO), 'utf8')) as ReleaseInfo };
  } catch {
    return undefined;
  }
}

/**
 * The command of a process: its entrypoint, else the Procfile's entry for its key (or `web` for the
 * web process), else the image's own command ('') for a container release, else `npm start` for a
 * web process; null when it has none.
 */
export function commandOf(p: { key: string; type: string; entrypoint: string }, info: ReleaseInfo): string | null {
  if (p.entrypoint.trim()) return p.entrypoint.trim();
  const fromProcfile = info.procfile[p.key] ?? (p.type === 'web' ? info.procfile.web : undefined);
  if (fromProcfile) return fromProcfile;
  if (info.image) return '';
  return p.type === 'web' ? 'npm start' : null;
}
