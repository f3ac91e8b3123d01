// Helpers of the real static site suite: a site as a local git repository whose npm build script
// writes the pages with node (nothing to download), and deployments waited for over HTTP.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { TestServer } from '../helpers/server.js';
import { untilStatus } from '../helpers/status.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { git } from '../apps-real/support.js';

/** Why the suite cannot run (no git on this machine), or false. */
export function gitMissing(): string | false {
  try {
    execFileSync('git', ['--version'], { stdio: 'pipe' });
    return false;
  } catch {
    return 'git is not installed';
  }
}

/** A script of 300+ bytes (so that the edge keeps compressed copies of it). */
export const APP_JS = `// app\n${Array.from({ length: 40 }, (_, i) => `console.log('line ${i}');`).join('\n')}\n`;

/** build.js: writes dist/ from src/version.txt and the GREETING build variable. */
const BUILD_JS = `
const fs = require('fs');
const v = fs.readFileSync('src/version.txt', 'utf8').trim();
if (v === 'broken') { console.error('build failed on purpose'); process.exit(1); }
if (v.startsWith('slow')) { console.log('slow build started'); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 4000); }
const w = (p, s) => { fs.mkdirSync(require('path').dirname('dist/' + p), { recursive: true }); fs.writeFileSync('dist/' + p, s); };
w('index.html', '<h1>home ' + v + ' ' + (process.env.GREETING || '') + '</h1>');
w('about.html', '<h1>about ' + v + '</h1>');
w('404.html', '<h1>custom not found</h1>');
w('docs/index.html', '<h1>docs</h1>');
w('assets/app.1a2b3c4d.js', fs.readFileSync('src/app.js', 'utf8'));
console.log('built version ' + v);
`;

/** A site repository (branch main) at version `v1`; `commit` changes files and returns the commit. */
export function makeSiteRepo() {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-site-'));
  git(dir, 'init', '-q', '-b', 'main');
  const put = (files: Record<string, string>) => {
    for (const [p, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, p)), { recursive: true });
      writeFileSync(join(dir, p), text);
    }
  };
  const commit = (files: Record<string, string>, message = 'change') => {
    put(files);
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', message);
    return git(dir, 'rev-parse', 'HEAD');
  };
  const first = commit(
    {
      'package.json': JSON.stringify({ name: 'site', version: '1.0.0', private: true, scripts: { build: 'node build.js' } }),
      'build.js': BUILD_JS,
      'src/version.txt': 'v1',
      'src/app.js': APP_JS,
      'README.md': '# site\n',
    },
    'version v1',
  );
  return { url: `file://${dir}`, dir, commit, first, branch: (name: string) => git(dir, 'checkout', '-q', '-B', name) };
}

/** Waits for the deployment's final status. */
export async function finalDeployment(s: TestServer, siteId: string, id: string) {
  const d = await untilStatus(`deployment ${id} to finish`, async () => expectStatus(await s.get(`/static-sites/${siteId}/deployments/${id}`), 200), {
    timeoutMs: 60_000,
    intervalMs: 50,
  });
  // nginx switches to the new release just after the deployment's success is committed.
  await s.app.runtimes.edge?.changed();
  return d;
}

/** A static site of `makeSiteRepo()` named `displayName`, its first deployment a success (asserted), served. */
export async function deployedSite(s: TestServer, displayName: string): Promise<{ id: string; hostname: string }> {
  const site = expectStatus(
    await s.post('/static-sites', {
      display_name: displayName,
      repo_url: makeSiteRepo().url,
      default_branch: 'main',
      source: 'publicGit',
      published_directory: 'dist',
    }),
    201,
  );
  const [d] = expectStatus(await s.get(`/static-sites/${site.id}/deployments`), 200).data;
  const done = await finalDeployment(s, site.id, d.id);
  if (done.status !== 'success') throw new Error(`the site's first deployment ended ${done.status}`);
  return site;
}

/** Adds the custom domain `name` to a site and refreshes it until it is ACTIVE (domain verification set to `immediate` first). */
export async function activeSiteDomain(s: TestServer, siteId: string, name: string): Promise<void> {
  expectStatus(await s.admin('PUT', '/simulation/progression/domain_verification', { mode: 'immediate' }), 200);
  const d = expectStatus(await s.post(`/static-sites/${siteId}/domains`, { domain_name: name }), 201);
  await waitFor(
    `${name} to be active`,
    async () => {
      await s.post(`/static-sites/${siteId}/domains/${d.id}/refresh-status`);
      return expectStatus(await s.get(`/static-sites/${siteId}/domains/${d.id}`), 200).status === 'ACTIVE';
    },
    10_000,
    50,
  );
}

/** Triggers a deployment and waits for its final status. */
export async function deploySite(s: TestServer, siteId: string, body: Record<string, unknown> = {}) {
  const d = expectStatus(await s.post(`/static-sites/${siteId}/deployments`, body), 201);
  return finalDeployment(s, siteId, d.id);
}

/** The build log of a deployment as one string. */
export async function buildLog(s: TestServer, siteId: string, id: string): Promise<string> {
  const logs = expectStatus(await s.get(`/static-sites/${siteId}/deployments/${id}/logs?limit=1000`), 200);
  return JSON.stringify(logs);
}
