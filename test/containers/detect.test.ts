// Builds of the container runtime without a Dockerfile: Node.js, Python, Go and static sites are
// detected and built from the base images (offline: scripts/build-base-images.sh), and each
// answers through the edge; a repository none of them matches fails with the reason.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { GENEROUS, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { runtimeLogs } from '../processes/support.js';
import { engineSkip } from '../support/container-engine.js';
import { createRealApp, deploy, edgeGet } from '../apps-real/support.js';
import { CONTAINER_ENV, repoOf } from './support.js';

const APPS: Record<string, { files: Record<string, string>; detected: RegExp }> = {
  node: {
    files: {
      'package.json': JSON.stringify({ name: 'n', version: '1.0.0', scripts: { start: 'node server.js' } }),
      'server.js': `require('http').createServer((q, r) => r.end('node ' + process.version)).listen(process.env.PORT);`,
    },
    detected: /Node\.js project detected; building from node:20-bookworm-slim/,
  },
  python: {
    files: {
      'requirements.txt': '',
      'app.py': [
        'import http.server, os, sys',
        'class H(http.server.BaseHTTPRequestHandler):',
        '    def do_GET(self):',
        "        self.send_response(200); self.end_headers(); self.wfile.write(('python %d.%d' % sys.version_info[:2]).encode())",
        "http.server.HTTPServer(('0.0.0.0', int(os.environ['PORT'])), H).serve_forever()",
      ].join('\n'),
    },
    detected: /Python project detected; building from python:3.11-slim-bookworm/,
  },
  go: {
    files: {
      'go.mod': 'module demo\n\ngo 1.22\n',
      'main.go': [
        'package main',
        'import ("net/http"; "os"; "runtime")',
        'func main() {',
        '  http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("go " + runtime.Version())) })',
        '  http.ListenAndServe(":"+os.Getenv("PORT"), nil)',
        '}',
      ].join('\n'),
    },
    detected: /Go project detected; building from golang:1\.22-bookworm/,
  },
  static: { files: { 'index.html': 'static page\n' }, detected: /static site project detected/ },
};

describe('container runtime: detected builds (sqlite)', { skip: await engineSkip() }, () => {
  const s = useServer({ db: 'sqlite', rateLimits: GENEROUS, env: CONTAINER_ENV });
  let port: number;
  before(() => {
    port = s.app.runtimes.edge!.port;
  });

  it('Node.js, Python, Go and a static site are each detected, built and served', async () => {
    // One after the other: the builds and the CPU-limited instances share two cores.
    const results = [];
    for (const [kind, spec] of Object.entries(APPS)) {
      const a = await createRealApp(s, repoOf(spec.files).url, `detect-${kind}`);
      const d = await deploy(s, a.id, 'deployments', {}, 180_000);
      const logs = JSON.stringify(expectStatus(await s.get(`/applications/${a.id}/deployments/${d.id}/logs`), 200));
      results.push({ kind, a, d, logs });
    }
    for (const { kind, a, d, logs } of results) {
      assert.equal(d.status, 'success', `${kind}: ${logs}`);
      assert.match(logs, APPS[kind]!.detected);
      const r = await edgeGet(port, `${a.name}.localhost`);
      assert.equal(r.status, 200, `${kind}: ${(await runtimeLogs(s, a.id)).map((l) => l.message).join('\n')}`);
      const expected = { node: /^node v20\./, python: /^python 3\.11$/, go: /^go go1\.\d+/, static: /^static page\n$/ }[kind]!;
      assert.match(r.body, expected, kind);
    }
  });

  it('a repository with nothing to detect fails the build with the reason', async () => {
    const a = await createRealApp(s, repoOf({ 'README.md': 'nothing here\n' }).url, 'detect-none');
    const d = await deploy(s, a.id);
    assert.equal(d.status, 'failed');
    assert.match(JSON.stringify(expectStatus(await s.get(`/applications/${a.id}/deployments/${d.id}/logs`), 200)), /Could not detect how to build/);
  });
});
