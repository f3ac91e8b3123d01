// The nginx process Slipway supervises: a configuration nginx refuses leaves the running one
// serving; nginx outlives the Node process that started it, and the next Slipway adopts it,
// reloads it and stops it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NginxProcess } from '../../src/shared/edge/nginx/process.js';
import { ask, host, nginxSkip, quietLog, startApp, TestEdge, upstream } from './support.js';

const processModule = fileURLToPath(new URL('../../src/shared/edge/nginx/process.ts', import.meta.url));

describe('edge on nginx: the process', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  let app: Awaited<ReturnType<typeof startApp>>;

  before(async () => {
    app = await startApp('app');
    edge = await TestEdge.create();
  });

  after(async () => {
    await edge?.stop();
    await app?.close();
  });

  it('outlives the Node process that started it, and the next one adopts, reloads and stops it', async () => {
    const generation = 5;
    const confFile = join(edge.dir, 'first.conf');
    writeFileSync(confFile, edge.render([host('app.test', upstream(app.port))], generation));
    // Another Node process applies the configuration and exits.
    const child = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { readFileSync } from 'node:fs';
         import { NginxProcess } from ${JSON.stringify(processModule)};
         const p = new NginxProcess(${JSON.stringify(edge.dir)}, { info() {}, warn() {} });
         await p.apply(readFileSync(${JSON.stringify(confFile)}, 'utf8'), ${generation});`,
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(child.status, 0, child.stderr);
    assert.equal((await ask(edge.http.port, 'app.test')).status, 200);

    const next = new NginxProcess(edge.dir, quietLog);
    assert.equal(await next.adopt(), true);
    assert.equal(await next.generation(), generation);
    const pid = next.masterPid();
    assert.ok(pid);
    // A reload of the adopted master keeps the same master.
    await next.apply(edge.render([host('app.test', upstream(app.port)), host('two.test', upstream(app.port))], generation + 1), generation + 1);
    assert.equal(next.masterPid(), pid);
    assert.equal((await ask(edge.http.port, 'two.test')).status, 200);
    edge.generation = generation + 1;

    await next.stop();
    assert.equal(next.masterPid(), null);
    assert.equal(await next.adopt(), false);
    await assert.rejects(ask(edge.http.port, 'app.test'));
  });

  it('refuses a configuration nginx refuses, and the running one keeps serving', async () => {
    await edge.apply([host('app.test', upstream(app.port))]);
    const running = edge.generation;
    const before = readFileSync(edge.nginx.confPath, 'utf8');
    const broken = edge.render([host('app.test', upstream(app.port))], running + 1).replace('server_tokens off;', 'server_tokens sideways;');
    await assert.rejects(edge.nginx.apply(broken, running + 1), /nginx refused the configuration: .*invalid value "sideways"/s);
    assert.equal(readFileSync(edge.nginx.confPath, 'utf8'), before);
    assert.equal(await edge.nginx.generation(), running);
    assert.equal((await ask(edge.http.port, 'app.test')).status, 200);
    // The next good one applies.
    await edge.apply([host('app.test', upstream(app.port)), host('three.test', upstream(app.port))]);
    assert.equal((await ask(edge.http.port, 'three.test')).status, 200);
  });

  it('keeps the running configuration (and its file) when a reload fails at run time', async () => {
    await edge.apply([host('app.test', upstream(app.port))]);
    const running = edge.generation;
    const before = readFileSync(edge.nginx.confPath, 'utf8');
    // nginx -t does not bind: a port already taken fails only in the reload.
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    const port = (taken.address() as { port: number }).port;
    try {
      const conf = edge.render([host('app.test', upstream(app.port))], running + 1).replace('server_name _;', `listen 127.0.0.1:${port};\n    server_name _;`);
      const impatient = new NginxProcess(edge.dir, quietLog, undefined, 1500);
      await assert.rejects(impatient.apply(conf, running + 1), /reload did not take effect.*Address already in use/s);
    } finally {
      taken.close();
    }
    assert.equal(readFileSync(edge.nginx.confPath, 'utf8'), before);
    assert.equal(await edge.nginx.generation(), running);
    assert.equal((await ask(edge.http.port, 'app.test')).status, 200);
  });

  it('refuses a table it cannot write (a hostname given twice, a value with $)', () => {
    assert.throws(() => edge.render([host('a.test', upstream(app.port)), host('a.test', upstream(app.port))]), /given twice/);
    assert.throws(
      () => edge.render([host('b.test', { type: 'static', root: '/srv/$x', compressedRoot: null, prettyUrls: false, notFoundPage: null, fallback: null })]),
      /cannot be written/,
    );
    assert.throws(() => edge.render([host('c.test', upstream(app.port), { ipRestriction: { type: 'allow', ips: ['1.2.3.4; deny all'] } })]), /not an IP/);
    assert.throws(() => edge.render([host('bad host', upstream(app.port))]), /invalid hostname/);
  });

  it('stops gracefully and leaves nothing listening', async () => {
    await edge.nginx.stop();
    assert.equal(edge.nginx.masterPid(), null);
    assert.equal(existsSync(edge.nginx.socketPath), false);
    await assert.rejects(ask(edge.http.port, 'app.test'));
  });
});
