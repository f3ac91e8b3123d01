// The process terminal: authentication, permission and existence are checked before the upgrade
// and answered as plain HTTP (401/403/404 with the error body, also to a WebSocket client); a plain
// request gets 426; an upgraded connection talks to the simulated shell (prompt, echo, env with the
// process's resolved variables, exit); idle and maximum session times close the session.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { DB_KINDS, skipUnless, startServer, type TestServer, useServer } from '../helpers/server.js';
import { MISSING, expectError, expectStatus, listAll } from '../helpers/util.js';
import { GENEROUS } from '../helpers/server.js';
import { IMMEDIATE_ENV, createApp, deploy } from '../applications/support.js';

/** A WebSocket client that gathers every text message and the close code. */
class Terminal {
  text = '';
  closed?: { code: number; reason: string };
  refused?: { status: number; body: any; headers: Record<string, unknown> };
  private ws: WebSocket;
  readonly opened: Promise<boolean>;
  constructor(url: string, token: string | null) {
    this.ws = new WebSocket(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    this.ws.on('message', (d) => (this.text += d.toString()));
    this.ws.on('close', (code, reason) => (this.closed = { code, reason: reason.toString() }));
    this.opened = new Promise((resolve) => {
      this.ws.on('open', () => resolve(true));
      this.ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => {
          this.refused = { status: res.statusCode ?? 0, body: JSON.parse(body), headers: res.headers };
          resolve(false);
        });
      });
      this.ws.on('error', () => resolve(false));
    });
  }
  send(line: string) {
    this.ws.send(line);
  }
  /** Waits until the gathered output matches (a hang guard, not a timing assertion). */
  async until(re: RegExp, what = String(re)): Promise<string> {
    const end = Date.now() + 15_000;
    while (!re.test(this.text)) {
      if (this.closed) throw new Error(`closed (${this.closed.code} ${this.closed.reason}) before ${what}; output: ${JSON.stringify(this.text)}`);
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; output: ${JSON.stringify(this.text)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.text;
  }
  async close() {
    const end = Date.now() + 15_000;
    while (!this.closed) {
      if (Date.now() > end) throw new Error(`the session did not close; output: ${JSON.stringify(this.text)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.closed;
  }
  end() {
    this.ws.close();
  }
}

for (const kind of DB_KINDS) {
  describe(`processes: terminal [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    const path = (appId: string, processId: string, query = '') => `/applications/${appId}/processes/${processId}/terminal${query}`;
    const wsUrl = (srv: TestServer, p: string) => `${srv.baseUrl.replace(/^http/, 'ws')}/v3${p}`;
    const connect = (srv: TestServer, p: string, token: string | null = srv.token) => new Terminal(wsUrl(srv, p), token);

    /** A deployed git application with one variable, and its web process. */
    async function deployedApp(srv: TestServer) {
      const a = await createApp(srv);
      expectStatus(
        await srv.post(`/applications/${a.id}/env-vars`, { key: 'GREETING', value: 'hello from ${SVL_APP_NAME}', is_runtime: true, is_buildtime: false }),
        201,
      );
      const release = await deploy(srv, a.id);
      const [web] = await listAll(srv, `/applications/${a.id}/processes`);
      return { a, web, release };
    }

    it('a plain HTTP request gets 426 with the error body, after authentication, permission and existence checks', async () => {
      const { a, web } = await deployedApp(s);
      const r = await s.get(path(a.id, web.id));
      expectError(r, 426, /Upgrade Required/);
      assert.equal(r.headers.get('upgrade'), 'websocket');
      assert.equal(r.headers.get('x-ratelimit-limit'), String(GENEROUS.service_mutation));
      expectError(await s.get(path(a.id, web.id), { token: null }), 401);
      expectError(await s.get(path(a.id, MISSING)), 404, 'Process not found');
      expectError(await s.get(path(MISSING, web.id)), 404, 'Application not found');
      expectError(await s.get(path(a.id, web.id, '?shell=fish')), 400);
      const viewer = await s.newKey({ role: 'Company Viewer' });
      expectError(await s.get(path(a.id, web.id), { token: viewer.token }), 403, /APP:UPDATE/);
      const other = await s.newCompany();
      expectError(await s.get(path(a.id, web.id), { token: other.token }), 404);
    });

    it('a WebSocket upgrade is refused with plain HTTP 401/403/404 and the error body before any upgrade', async () => {
      const { a, web } = await deployedApp(s);
      const viewer = await s.newKey({ role: 'Company Viewer' });
      const scopedElsewhere = await s.newKey({ capabilities: [{ permission: 'APP:UPDATE', id_resource: MISSING }] });
      const cases: [string, string | null, number, RegExp][] = [
        [path(a.id, web.id), null, 401, /./],
        [path(a.id, web.id), 'svl_' + '0'.repeat(64), 401, /./],
        [path(a.id, web.id), viewer.token, 403, /APP:UPDATE/],
        [path(a.id, web.id), scopedElsewhere.token, 404, /not found/],
        [path(MISSING, web.id), s.token, 404, /Application not found/],
        [path(a.id, MISSING), s.token, 404, /Process not found/],
      ];
      for (const [p, token, status, message] of cases) {
        const t = connect(s, p, token);
        assert.equal(await t.opened, false, `${p} with ${token} must not upgrade`);
        assert.equal(t.refused?.status, status);
        assert.equal(t.refused?.body.status, status);
        assert.match(t.refused?.body.message, message);
      }
    });

    it('a session: prompt, echo with quoting and variables, env with the resolved runtime variables, unknown commands, exit with its status', async () => {
      const { a, web, release } = await deployedApp(s);
      const t = connect(s, path(a.id, web.id, '?shell=bash'));
      assert.equal(await t.opened, true);
      await t.until(/:\/app\$ $/, 'the prompt');
      assert.ok(t.text.startsWith(`${a.name}-web-`), t.text);

      t.text = '';
      t.send('echo hello "$GREETING" \'$GREETING\' ${SVL_APP_ID}\n');
      await t.until(/\$ $/);
      assert.equal(t.text.split('\n')[0], `hello hello from ${a.name} $GREETING ${a.id}`);

      t.text = '';
      t.send('env\n');
      const out = await t.until(/\$ $/);
      const vars = Object.fromEntries(
        out
          .split('\n')
          .slice(0, -1)
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      assert.equal(vars.GREETING, `hello from ${a.name}`);
      assert.equal(vars.SVL_APP_ID, a.id);
      assert.equal(vars.SVL_APP_NAME, a.name);
      assert.equal(vars.SVL_COMPANY_ID, s.companyId);
      assert.equal(vars.SVL_DEPLOYMENT_ID, release.id);
      assert.equal(vars.SVL_DEPLOYMENT_COMMIT_SHA, release.commit_sha);
      assert.equal(vars.PORT, '8080');

      t.text = '';
      t.send('frobnicate --now\r\necho $?\n');
      await t.until(/127\n.*\$ $/s);
      assert.match(t.text, /^bash: frobnicate: not found\n/m);

      t.text = '';
      t.send('exit 3\n');
      const closed = await t.close();
      assert.equal(closed.code, 4003);
      assert.equal(closed.reason, 'Shell exited with status 3');
      assert.match(t.text, /^exit\n/);
    });

    it('input sent in pieces runs once a line is complete; csh shows its own prompt', async () => {
      const { a, web } = await deployedApp(s);
      const t = connect(s, path(a.id, web.id, '?shell=csh'));
      assert.equal(await t.opened, true);
      await t.until(/% $/, 'the csh prompt');
      t.text = '';
      t.send('ec');
      t.send('ho split ');
      t.send('line\n');
      await t.until(/split line\n.*% $/s);
      t.end();
      assert.ok((await t.close()).code);
    });

    it('an application without a running release: the upgrade succeeds and the session closes with 4001', async () => {
      const a = await createApp(s);
      const [web] = await listAll(s, `/applications/${a.id}/processes`);
      const t = connect(s, path(a.id, web.id));
      assert.equal(await t.opened, true);
      const closed = await t.close();
      assert.equal(closed.code, 4001);
      assert.equal(t.text, '');
    });

    it('an idle session is closed (4003, idle timeout); a session is closed at its maximum length', async () => {
      const idle = await startServer({ db: kind, rateLimits: GENEROUS, env: { ...IMMEDIATE_ENV, SLIPWAY_TERMINAL_IDLE_MS: '200' } });
      const long = await startServer({ db: kind, rateLimits: GENEROUS, env: { ...IMMEDIATE_ENV, SLIPWAY_TERMINAL_MAX_MS: '400' } });
      try {
        const i = await deployedApp(idle);
        const t = connect(idle, path(i.a.id, i.web.id));
        assert.equal(await t.opened, true);
        const c1 = await t.close();
        assert.equal(c1.code, 4003);
        assert.equal(c1.reason, 'Idle timeout');
        assert.match(t.text, /Session closed: no input/);

        const l = await deployedApp(long);
        const u = connect(long, path(l.a.id, l.web.id));
        assert.equal(await u.opened, true);
        const c2 = await u.close();
        assert.equal(c2.code, 4003);
        assert.equal(c2.reason, 'Maximum session time reached');
      } finally {
        await idle.close();
        await long.close();
      }
    });

    it('the served document lists the terminal as one operation: 101 on upgrade, 426 otherwise, its permission and tier', async () => {
      const doc = expectStatus(await s.get('/openapi.json'), 200);
      const op = doc.paths['/applications/{id}/processes/{process_id}/terminal'].get;
      assert.equal(op.operationId, 'openTerminalV3');
      assert.ok(op.responses['101']);
      assert.ok(op.responses['426']);
      assert.ok(!Object.keys(op.responses).some((c) => c.startsWith('2')));
      assert.equal(op['x-permission'], 'APP:UPDATE');
      assert.equal(op['x-rate-tier'], 'service_mutation');
      assert.deepEqual(
        op.parameters.map((p: any) => p.name),
        ['id', 'process_id', 'shell'],
      );
    });
  });
}
