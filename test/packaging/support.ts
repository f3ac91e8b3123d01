// Helpers of the packaging suites: the checkout packed with `npm pack` (which builds it), and the
// tarball installed with production dependencies only into an empty folder.
import { cpSync, mkdtempSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

/** What `npm pack` needs to build: the sources, the dashboard's, the build scripts and the docs it ships. */
const PACKED = ['package.json', 'package-lock.json', 'bin', 'src', 'web', 'scripts', 'docs', 'README.md', 'tsconfig.json'];
const BUILT = new Set([join(root, 'web', 'dist'), join(root, 'web', 'node_modules'), join(root, 'dist')]);

/**
 * Packs a copy of the checkout (its build writes dist/ and web/dist/ there, not under the tests
 * running beside this one) with the checkout's node_modules; returns the tarball's path.
 */
export async function pack(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-pack-'));
  const copy = join(dir, 'slipway');
  for (const p of PACKED) cpSync(join(root, p), join(copy, p), { recursive: true, filter: (src) => !BUILT.has(src) });
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
  await run('npm', ['pack', '--pack-destination', dir, '--silent'], { cwd: copy, maxBuffer: 64 * 1024 * 1024 });
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack left no tarball in ${dir}`);
  return join(dir, tarball);
}

/** Installs `tarball` with production dependencies only into a new empty folder; returns the folder. */
export async function install(tarball: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-install-'));
  await run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', tarball], { cwd: dir, maxBuffer: 64 * 1024 * 1024 });
  return dir;
}

/** The API's base URL and the bootstrap key from a start banner (`slipway serve`'s standard output). */
export function banner(out: string): { base: string; token: string } | null {
  const base = /serving the Hosting Platform API v3 at (\S+)\/v3/.exec(out)?.[1];
  const token = /API key:\s+(\S+)/.exec(out)?.[1];
  return base && token ? { base, token } : null;
}
