// Helpers of the container runtime's suites: the server's environment, git repositories of tiny
// apps built from the offline base images, and the engine's view of what Slipway left (by label).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { git, LOCAL_ENV } from '../apps-real/support.js';
import { engineAddress } from '../support/container-engine.js';
import type { TestServer } from '../helpers/server.js';

export const CONTAINER_ENV = { ...LOCAL_ENV, SLIPWAY_RUNTIME: 'container', SLIPWAY_APPS_READY_TIMEOUT_MS: '60000', DOCKER_HOST: process.env.DOCKER_HOST ?? '' };

export const docker = () => new Docker(engineAddress() ?? undefined);

/** A git repository (branch main) holding `files`; `commit` replaces files and commits. */
export function repoOf(files: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-container-app-'));
  git(dir, 'init', '-q', '-b', 'main');
  const commit = (more: Record<string, string>, message = 'change') => {
    for (const [name, text] of Object.entries(more)) writeFileSync(join(dir, name), text);
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', message);
    return git(dir, 'rev-parse', 'HEAD');
  };
  const first = commit(files, 'first');
  return { url: `file://${dir}`, dir, commit, first };
}

/** The containers the engine runs (or holds) for an application. */
export async function containersOf(appId: string, all = false) {
  return docker().listContainers({ all, filters: { label: [`slipway.app=${appId}`] } });
}

/** The image tags Slipway made for an application. */
export async function imagesOf(appId: string): Promise<string[]> {
  const list = await docker().listImages({ filters: { reference: [`slipway/${appId}`] } });
  return list.flatMap((i) => i.RepoTags ?? []);
}

/** A Python web server (from the offline base image) answering `<text>`, its memory limit and FROM_ENV at run time and at build time (a declared ARG), as a Dockerfile app. */
export const pythonDockerfile = (text: string) => ({
  Dockerfile: [
    'FROM python:3.11-slim-bookworm',
    'WORKDIR /srv',
    'COPY server.py .',
    'ARG FROM_ENV',
    'RUN echo "built with $FROM_ENV" > built',
    `ENV ANSWER=${text}`,
    'CMD ["python3", "server.py"]',
  ].join('\n'),
  'server.py': [
    'import http.server, os',
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    "        limit = open('/sys/fs/cgroup/memory/memory.limit_in_bytes').read().strip()",
    "        body = (os.environ['ANSWER'] + ' ' + limit + ' ' + os.environ.get('FROM_ENV', '') + ' ' + open('built').read().strip()).encode()",
    '        self.send_response(200); self.end_headers(); self.wfile.write(body)',
    "print('listening on', os.environ['PORT'], flush=True)",
    "http.server.HTTPServer(('0.0.0.0', int(os.environ['PORT'])), H).serve_forever()",
  ].join('\n'),
});

/**
 * A Dockerfile app of a Python web server (offline base image) answering GET with what
 * `handle(path)` returns (a Python function given as source; a raised error answers 500 with it).
 */
export const pythonHandler = (handle: string) => ({
  Dockerfile: ['FROM python:3.11-slim-bookworm', 'WORKDIR /srv', 'COPY server.py .', 'CMD ["python3", "server.py"]'].join('\n'),
  'server.py': [
    'import http.server, os, urllib.request',
    handle,
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    '        try:',
    '            body, code = handle(self.path), 200',
    '        except Exception as e:',
    '            body, code = repr(e), 500',
    '        self.send_response(code); self.end_headers(); self.wfile.write(body.encode())',
    "http.server.ThreadingHTTPServer(('0.0.0.0', int(os.environ['PORT'])), H).serve_forever()",
  ].join('\n'),
});

/** The server's harness with another key's token on GET, POST and PATCH (another company's, say). */
export const asCompany = (s: TestServer, token: string) =>
  ({
    ...s,
    get: (path: string) => s.get(path, { token }),
    post: (path: string, body?: unknown) => s.post(path, body, { token }),
    patch: (path: string, body?: unknown) => s.patch(path, body, { token }),
  }) as unknown as TestServer;
