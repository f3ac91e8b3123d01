// Helpers of the local-runtime suites: small Node apps as local git repositories, and requests through the edge.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import WebSocket from 'ws';
import { DEFAULT_CLUSTER } from '../applications/support.js';
import { untilStatus } from '../helpers/status.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import type { TestServer } from '../helpers/server.js';

export const LOCAL_ENV = { SLIPWAY_RUNTIME: 'local', SLIPWAY_EDGE_PORT: '0', SLIPWAY_APPS_READY_TIMEOUT_MS: '4000', SLIPWAY_APPS_STOP_GRACE_MS: '2000' };

/** A server answering `<version> <pid>` (or exiting at once when `crash`). */
export const serverJs = (version: string, crash = false) =>
  crash
    ? `console.error('boom'); process.exit(1);\n`
    : `require('http').createServer((req, res) => { res.end('${version} ' + process.pid); }).listen(process.env.PORT, () => console.log('listening on ' + process.env.PORT));\n`;

export const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    stdio: 'pipe',
    env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' },
  })
    .toString()
    .trim();

/** A git repository (branch main) with a package.json and server.js (and `files`); returns its file:// URL and a committer. */
export function makeRepo(version: string, files: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-app-'));
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'demo', version: '1.0.0', scripts: { start: 'node server.js' } }));
  const commit = (v: string, crash = false, files: Record<string, string> = {}) => {
    writeFileSync(join(dir, 'server.js'), serverJs(v, crash));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', `version ${v}`);
    return git(dir, 'rev-parse', 'HEAD');
  };
  const first = commit(version, false, files);
  return { url: `file://${dir}`, dir, commit, first };
}

export async function createRealApp(s: TestServer, repoUrl: string, name: string) {
  return expectStatus(
    await s.post('/applications', {
      display_name: name,
      cluster_id: DEFAULT_CLUSTER.id,
      source: 'publicGit',
      git_type: 'github',
      repo_url: repoUrl,
      default_branch: 'main',
    }),
    201,
  );
}

/** Deploys and waits for the final status (for up to `timeoutMs`). */
export async function deploy(s: TestServer, appId: string, path = 'deployments', body: Record<string, unknown> = {}, timeoutMs = 60_000) {
  const d = expectStatus(await s.post(`/applications/${appId}/${path}`, body), 200);
  return untilStatus(`deployment ${d.id} to finish`, async () => expectStatus(await s.get(`/applications/${appId}/deployments/${d.id}`), 200), {
    timeoutMs,
    intervalMs: 50,
  });
}

export interface EdgeResponse {
  status: number;
  body: string;
  /** The body's bytes as received (not decoded). */
  raw: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

/** A request through the edge with a Host header (GET of `/` unless told). */
export function edgeGet(port: number, host: string, headers: Record<string, string> = {}, path = '/', method = 'GET'): Promise<EdgeResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers: { host, ...headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        resolve({ status: res.statusCode!, body: raw.toString(), raw, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Whether `pid` runs: a zombie (killed, not yet reaped by whatever adopted it) does not. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; Z is a zombie.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** A session of a process's terminal (the WebSocket operation): what it printed so far, and its close code once closed. */
export async function openTerminal(s: TestServer, appId: string, processId: string) {
  const ws = new WebSocket(`${s.baseUrl.replace(/^http/, 'ws')}/v3/applications/${appId}/processes/${processId}/terminal`, {
    headers: { authorization: `Bearer ${s.token}` },
  });
  const session = { text: '', closed: undefined as number | undefined, send: (line: string) => ws.send(line) };
  ws.on('message', (d) => (session.text += d.toString()));
  ws.on('close', (code) => (session.closed = code));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return session;
}

/**
 * Runs `during` while requests go to `host` through the edge one after the other, and a few more
 * after it ended; returns its result, the first word of each 200 answer, and every other answer.
 */
export async function underLoad<T>(port: number, host: string, during: () => Promise<T>) {
  let stop = false;
  const seen: string[] = [];
  const failures: string[] = [];
  const load = (async () => {
    while (!stop) {
      try {
        const r = await edgeGet(port, host);
        if (r.status !== 200) failures.push(`${r.status} ${r.body}`);
        else seen.push(r.body.split(' ')[0]!);
      } catch (e) {
        failures.push(String(e));
      }
    }
  })();
  const result = await during();
  const after = seen.length;
  await waitFor('requests after it', () => seen.length > after + 5);
  stop = true;
  await load;
  return { result, seen, failures };
}
