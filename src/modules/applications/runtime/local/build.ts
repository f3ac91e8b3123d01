// Builds of the local host: on the checkout (../source.ts), detect how to build (Node: `npm ci` with a lock file, else `npm install`; `npm run build` when defined), read
// the Procfile, and turn the result into an immutable release directory
// (`<root>/releases/<app>/<deployment>`). Every command's output is streamed into the build log
// line by line as it happens. Nothing here holds a database transaction.
import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { cp, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { baseEnv, BuildError, runStreamed } from '../../../../shared/runtime/build.js';
import { buildDir, type BuildSpec } from '../source.js';
import { appReleasesDir, parseProcfile, releaseDir, writeReleaseInfo, type ReleaseInfo } from '../release.js';

/** Builds the checked-out source and moves it into its release directory (immutable from then on). */
export async function build(root: string, s: BuildSpec, commit: { sha: string; message: string }): Promise<ReleaseInfo> {
  const src = join(buildDir(root, s.deploymentId), 'src');
  if (!existsSync(src)) throw new BuildError('The checkout is missing; deploy again');
  const deadline = Date.now() + s.timeoutMs;
  const env: Record<string, string> = { ...baseEnv(), ...s.env, CI: 'true' };
  const run = (args: string[]) => runStreamed('npm', args, { cwd: src, env, log: s.log, deadline, signal: s.signal });
  const pkgPath = join(src, 'package.json');
  if (existsSync(pkgPath)) {
    const pkg = JSON.parse(await readFile(pkgPath, 'utf8')) as { scripts?: Record<string, string> };
    const lock = existsSync(join(src, 'package-lock.json')) || existsSync(join(src, 'npm-shrinkwrap.json'));
    const key = await dependencyKey(src);
    if (s.cacheDir) env.npm_config_cache = join(s.cacheDir, 'npm');
    if (s.cacheDir && (await restoreDependencies(s.cacheDir, src, key))) {
      await s.log([{ message: 'Build cache used: package.json and the lock file are unchanged; dependencies reused from the previous build' }]);
    } else {
      await s.log([
        {
          message: s.cacheDir
            ? `Build cache: no reusable dependencies (first build or changed lock file); npm's download cache is ${env.npm_config_cache}`
            : 'Build cache disabled: dependencies are installed from scratch',
        },
      ]);
      await s.log([{ message: `Node.js project detected; installing dependencies with npm ${lock ? 'ci' : 'install'}` }]);
      await run(lock ? ['ci', '--no-audit', '--no-fund'] : ['install', '--no-audit', '--no-fund']);
      if (s.cacheDir) await saveDependencies(s.cacheDir, src, key);
    }
    if (pkg.scripts?.build) {
      await s.log([{ message: 'Running npm run build' }]);
      await run(['run', 'build']);
    }
  } else {
    await s.log([{ message: 'No package.json: no build step (processes run their Procfile or entrypoint commands)' }]);
  }
  const procfile = existsSync(join(src, 'Procfile')) ? parseProcfile(await readFile(join(src, 'Procfile'), 'utf8')) : {};
  if (Object.keys(procfile).length) await s.log([{ message: `Procfile: ${Object.keys(procfile).join(', ')}` }]);
  const info: ReleaseInfo = { commitSha: commit.sha, commitMessage: commit.message, procfile };
  await writeReleaseInfo(src, info);
  const target = releaseDir(root, s.appId, s.deploymentId);
  await mkdir(appReleasesDir(root, s.appId), { recursive: true });
  await rm(target, { recursive: true, force: true });
  await rename(src, target);
  await rm(buildDir(root, s.deploymentId), { recursive: true, force: true });
  await s.log([{ message: `Release ${s.deploymentId} ready` }]);
  return info;
}

/** What the installed dependencies depend on: package.json and the lock file. */
async function dependencyKey(src: string): Promise<string> {
  const h = createHash('sha256');
  for (const f of ['package.json', 'package-lock.json', 'npm-shrinkwrap.json']) {
    h.update(`${f}\0`);
    if (existsSync(join(src, f))) h.update(await readFile(join(src, f)));
  }
  return h.digest('hex');
}

/** Copies the cached node_modules into the checkout when they were installed for the same key; true when reused. */
async function restoreDependencies(cacheDir: string, src: string, key: string): Promise<boolean> {
  const dir = join(cacheDir, 'deps');
  const saved = await readFile(join(dir, 'key'), 'utf8').catch(() => null);
  if (saved !== key) return false;
  await rm(join(src, 'node_modules'), { recursive: true, force: true });
  if (existsSync(join(dir, 'node_modules'))) await cp(join(dir, 'node_modules'), join(src, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  return true;
}

/** Keeps a copy of the installed node_modules for the next build (replacing the previous copy). */
async function saveDependencies(cacheDir: string, src: string, key: string): Promise<void> {
  const dir = join(cacheDir, 'deps');
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  if (existsSync(join(src, 'node_modules'))) await cp(join(src, 'node_modules'), join(dir, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  // The key last: a copy cut short is never taken for a complete one.
  await writeFile(join(dir, 'key'), key);
}
