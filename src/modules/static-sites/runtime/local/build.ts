// Real builds of static sites (SLIPWAY_RUNTIME=local), one function per phase; each can run twice.
//   checkout: clones the branch into `<root>/builds/<deployment>/src` (Git LFS files pulled when
//             the site wants them and git-lfs is installed), then compares the commit with the
//             lane's previous release: when no changed file is a deploy path, the deployment is skipped.
//   build:    runs `install_command` and `build_command` (defaults: npm, when there is a
//             package.json) in `root_directory` with the site's build environment.
//   publish:  moves `published_directory` into the immutable release directory
//             `<root>/releases/<site>/<deployment>` (`public/` plus gzip and brotli copies of the
//             compressible files under `encoded/`, so that the edge never compresses per request,
//             and `beside/`: public's files hard-linked with each copy next to its file, the layout
//             nginx's gzip_static and brotli_static read).
// Every command's output is streamed into the deployment's build log.
import { existsSync } from 'node:fs';
import { link, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants as zc, gzip } from 'node:zlib';
import { deployPaths } from '../../git.js';
import { baseEnv, BuildError, cloneBranch, gitEnv, quietly, runStreamed, type BuildLog } from '../../../../shared/runtime/build.js';

export const buildDir = (root: string, deploymentId: string) => join(root, 'builds', deploymentId);
export const siteReleasesDir = (root: string, siteId: string) => join(root, 'releases', siteId);
export const releaseDir = (root: string, siteId: string, releaseId: string) => join(siteReleasesDir(root, siteId), releaseId);
/** The files of a release, as published. */
export const publicDir = (release: string) => join(release, 'public');
/** Precompressed copies of a release's compressible files (same relative paths). */
export const encodedDir = (release: string, encoding: Encoding) => join(release, 'encoded', encoding);
export type Encoding = 'br' | 'gzip';
/** Public's files (hard links) with their copies beside them as `<file>.gz` and `<file>.br`. */
export const besideDir = (release: string) => join(release, 'beside');
const SUFFIX: Record<Encoding, string> = { gzip: '.gz', br: '.br' };

export interface SiteBuild {
  siteId: string;
  deploymentId: string;
  repoUrl: string;
  branch: string;
  rootDirectory: string | null;
  installCommand: string | null;
  buildCommand: string | null;
  publishedDirectory: string | null;
  nodeVersion: string | null;
  lfs: boolean;
  /** The build environment (resolved variables). */
  env: Record<string, string>;
  /** Git's access to a private repository (the clone's environment only). */
  access?: Record<string, string>;
  /** The commit of the lane's previous release (deploy paths compare with it), or null. */
  previousSha: string | null;
  allow: string[];
  ignore: string[];
  timeoutMs: number;
  log: BuildLog;
  signal: AbortSignal;
}

/** A directory inside `base` (400-like build error when a setting points outside the checkout). */
function inside(base: string, rel: string | null, what: string): string {
  const p = resolve(base, rel ?? '.');
  if (p !== base && !p.startsWith(base + sep)) throw new BuildError(`${what} "${rel}" points outside the repository`);
  return p;
}

/** Clones the branch; returns the commit, and `skipped` when no changed file is a deploy path. */
export async function checkoutSite(root: string, s: SiteBuild): Promise<{ sha: string; message: string; skipped?: string }> {
  const dir = buildDir(root, s.deploymentId);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const deadline = Date.now() + s.timeoutMs;
  const lfsInstalled = await quietly('git', ['lfs', 'version'], { cwd: dir, env: gitEnv(), deadline, signal: s.signal }).then(
    () => true,
    () => false,
  );
  // Without the site's consent, LFS pointers stay pointers even where git-lfs is installed.
  const commit = await cloneBranch(dir, { ...s, deadline, env: s.lfs ? {} : { GIT_LFS_SKIP_SMUDGE: '1' } });
  const src = join(dir, 'src');
  const o = { cwd: src, env: gitEnv(), deadline, signal: s.signal };
  if (s.lfs) {
    const attrs = existsSync(join(src, '.gitattributes')) ? await readFile(join(src, '.gitattributes'), 'utf8') : '';
    if (!attrs.includes('filter=lfs')) await s.log([{ message: 'Git LFS: the repository tracks no files with LFS' }]);
    else if (!lfsInstalled)
      await s.log([{ message: 'Git LFS: git-lfs is not installed on this machine; LFS-tracked files stay pointer files', severity: 'warning' }]);
    else {
      await s.log([{ message: 'Git LFS: pulling LFS-tracked files' }]);
      await runStreamed('git', ['lfs', 'pull'], { ...o, log: s.log });
    }
  } else await s.log([{ message: 'Git LFS: disabled for this site (LFS-tracked files stay pointer files)' }]);
  const skipped = await deployPathsUnchanged(s, commit.sha, o);
  if (skipped) await rm(dir, { recursive: true, force: true });
  return { ...commit, skipped };
}

/** Why the deployment has nothing to do (no changed file is a deploy path), or undefined: it deploys. */
async function deployPathsUnchanged(s: SiteBuild, sha: string, o: { cwd: string; env: Record<string, string>; deadline: number; signal: AbortSignal }) {
  if (!s.allow.length && !s.ignore.length) return undefined;
  // A first release, or the same commit again (a redeploy on request, e.g. after a variable changed), deploys.
  if (!s.previousSha || s.previousSha === sha) return undefined;
  let changed: string[];
  try {
    await quietly('git', ['fetch', '--depth', '1', 'origin', s.previousSha], o);
    changed = (await quietly('git', ['diff', '--name-only', s.previousSha, sha], o)).split('\n').filter(Boolean);
  } catch {
    await s.log([{ message: `Deploy paths: the previous release's commit ${s.previousSha.slice(0, 7)} is not in the repository any more; deploying` }]);
    return undefined;
  }
  const { relevant: counts, list } = deployPaths(s.allow, s.ignore);
  const relevant = changed.filter(counts);
  if (relevant.length) {
    await s.log([{ message: `Deploy paths: ${relevant.length} of ${changed.length} changed files since ${s.previousSha.slice(0, 7)} count (${list})` }]);
    return undefined;
  }
  return `Deploy paths: none of the ${changed.length} files changed since ${s.previousSha.slice(0, 7)} counts (${list}); nothing to deploy`;
}

/** Runs the install and build commands in the root directory of the checkout. */
export async function buildSite(root: string, s: SiteBuild): Promise<void> {
  const src = join(buildDir(root, s.deploymentId), 'src');
  if (!existsSync(src)) throw new BuildError('The checkout is missing; deploy again');
  const cwd = inside(src, s.rootDirectory, 'root_directory');
  if (!existsSync(cwd)) throw new BuildError(`root_directory "${s.rootDirectory}" does not exist in the repository`);
  const deadline = Date.now() + s.timeoutMs;
  const env = { ...baseEnv(), ...s.env, CI: 'true' };
  await s.log([
    {
      message: s.nodeVersion
        ? `node_version ${s.nodeVersion} requested: this machine's Node.js ${process.version} is used (the local runtime does not switch Node versions)`
        : `Node.js ${process.version} (this machine's)`,
    },
  ]);
  const run = (command: string) => runStreamed('sh', ['-c', command], { cwd, env, log: s.log, deadline, signal: s.signal });
  let install = s.installCommand?.trim() || null;
  let buildCmd = s.buildCommand?.trim() || null;
  if (existsSync(join(cwd, 'package.json'))) {
    const pkg = JSON.parse(await readFile(join(cwd, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
    const lock = existsSync(join(cwd, 'package-lock.json')) || existsSync(join(cwd, 'npm-shrinkwrap.json'));
    install ??= lock ? 'npm ci --no-audit --no-fund' : 'npm install --no-audit --no-fund';
    if (pkg.scripts?.build) buildCmd ??= 'npm run build';
  }
  for (const [what, cmd] of [
    ['Install', install],
    ['Build', buildCmd],
  ] as const) {
    if (!cmd) {
      await s.log([{ message: `${what}: no command (none set, and no package.json providing one)` }]);
      continue;
    }
    await s.log([{ message: `${what}: ${cmd}` }]);
    await run(cmd);
  }
}

const COMPRESSIBLE = new Set([
  '.html',
  '.htm',
  '.css',
  '.js',
  '.mjs',
  '.cjs',
  '.json',
  '.map',
  '.svg',
  '.txt',
  '.xml',
  '.md',
  '.csv',
  '.wasm',
  '.webmanifest',
  '.ico',
  '.ttf',
  '.otf',
]);
const MIN_COMPRESS = 256;
const MAX_COMPRESS = 16 * 1024 * 1024;
const gz = promisify(gzip);
const br = promisify(brotliCompress);

async function* files(dir: string): AsyncGenerator<string> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* files(p);
    else if (e.isFile()) yield p;
  }
}

/** Writes gzip and brotli copies of the compressible files that get smaller. */
async function precompress(release: string): Promise<number> {
  const pub = publicDir(release);
  let n = 0;
  for await (const f of files(pub)) {
    if (!COMPRESSIBLE.has(extname(f).toLowerCase())) continue;
    const { size } = await stat(f);
    if (size < MIN_COMPRESS || size > MAX_COMPRESS) continue;
    const data = await readFile(f);
    const rel = relative(pub, f);
    const variants: [Encoding, Buffer][] = [
      ['gzip', await gz(data, { level: 9 })],
      ['br', await br(data, { params: { [zc.BROTLI_PARAM_QUALITY]: 9, [zc.BROTLI_PARAM_SIZE_HINT]: size } })],
    ];
    for (const [enc, out] of variants) {
      if (out.length >= size) continue;
      const target = join(encodedDir(release, enc), rel);
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, out);
    }
    n++;
  }
  return n;
}

/** Fills `beside/`: every published file linked, and each copy linked next to it unless the site published that name itself. */
async function linkBeside(release: string): Promise<void> {
  const pub = publicDir(release);
  const out = besideDir(release);
  const made = new Set<string>();
  for await (const f of files(pub)) {
    const rel = relative(pub, f);
    const dir = dirname(join(out, rel));
    if (!made.has(dir)) {
      await mkdir(dir, { recursive: true });
      made.add(dir);
    }
    await link(f, join(out, rel));
    for (const enc of ['gzip', 'br'] as Encoding[]) {
      const copy = join(encodedDir(release, enc), rel);
      if (existsSync(copy) && !existsSync(f + SUFFIX[enc])) await link(copy, join(out, rel + SUFFIX[enc]));
    }
  }
}

/** Facts of a release (written last: a release directory without it is incomplete). */
export interface ReleaseInfo {
  commitSha: string;
}

/** Moves the published directory into the release directory (replaced whole), with compressed copies. */
export async function publishSite(root: string, s: SiteBuild, commitSha: string): Promise<void> {
  const target = releaseDir(root, s.siteId, s.deploymentId);
  if (existsSync(join(target, 'release.json'))) {
    await s.log([{ message: `Release ${s.deploymentId} is already published` }]);
    return;
  }
  const tmp = `${target}.partial`;
  // A publish that ran before (and stopped) may have moved the files already: it goes on from there.
  if (!existsSync(publicDir(tmp))) {
    const src = join(buildDir(root, s.deploymentId), 'src');
    if (!existsSync(src)) throw new BuildError('The build output is missing; deploy again');
    const base = inside(src, s.rootDirectory, 'root_directory');
    const published = inside(base, s.publishedDirectory, 'published_directory');
    if (!existsSync(published) || !(await stat(published)).isDirectory())
      throw new BuildError(`published_directory "${s.publishedDirectory ?? '.'}" does not exist after the build`);
    await rm(join(src, '.git'), { recursive: true, force: true });
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true });
    await rename(published, publicDir(tmp));
  }
  await rm(join(tmp, 'encoded'), { recursive: true, force: true });
  await rm(besideDir(tmp), { recursive: true, force: true });
  const compressed = await precompress(tmp);
  await linkBeside(tmp);
  const info: ReleaseInfo = { commitSha };
  await writeFile(join(tmp, 'release.json'), JSON.stringify(info));
  await rm(target, { recursive: true, force: true });
  await rename(tmp, target);
  await rm(buildDir(root, s.deploymentId), { recursive: true, force: true });
  await s.log([{ message: `Published ${s.publishedDirectory ?? 'the root directory'} as release ${s.deploymentId} (${compressed} files precompressed)` }]);
}

/** True when the release directory is complete. */
export const isPublished = (root: string, siteId: string, releaseId: string) => existsSync(join(releaseDir(root, siteId, releaseId), 'release.json'));
