// Application settings: maintenance mode (https-only page URL), egress IPs per region, IP
// restriction (allow/deny, addresses and CIDR ranges), CDN toggle and cache purge, simulated
// access logs, TCP proxies and private ports. Permissions (Viewer 403 on writes), tenancy (404
// for another company), the service_mutation tier per application, 400 while the application is
// being deleted, and the settings rows gone once it is deleted.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer, type TestServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll, MISSING, UUID_RE, waitFor, whileRowsHeld } from '../helpers/util.js';
import type { Tx } from '../../src/shared/db/index.js';
import { CLUSTERS } from '../../src/modules/resources/catalog.js';
import { FIXED_EGRESS_REGIONS } from '../../src/modules/applications/settings.js';
import { DEFAULT_CLUSTER, IMMEDIATE_ENV, appPath, createApp, deploy, setProgression } from './support.js';

const mm = (id: string) => `${appPath(id)}/maintenance-mode`;
const ipr = (id: string) => `${appPath(id)}/ip-restriction`;
const tcp = (id: string) => `${appPath(id)}/tcp-proxies`;
const pp = (id: string) => `${appPath(id)}/private-ports`;

/** The web process of the application (created with it). */
async function webProcess(s: TestServer, appId: string, token?: string) {
  const web = (await listAll(s, `${appPath(appId)}/processes`, token)).find((p) => p.type === 'web');
  assert.ok(web, 'the application has a web process');
  return web as { id: string };
}

/** Every write of the settings area with a body that passes validation. */
function writes(appId: string, processId: string): [string, string, unknown?][] {
  return [
    ['PUT', mm(appId), { is_enabled: true }],
    ['PUT', ipr(appId), { type: 'allow', is_enabled: true, ip_list: ['10.0.0.1'] }],
    ['POST', `${appPath(appId)}/cdn/toggle`],
    ['POST', `${appPath(appId)}/purge-cache`],
    ['POST', tcp(appId), { process_id: processId, port: 5432 }],
    ['DELETE', `${tcp(appId)}/${MISSING}`],
    ['POST', pp(appId), { process_id: processId, port: 9000 }],
    ['DELETE', `${pp(appId)}/${MISSING}`],
  ];
}

const reads = (appId: string) => [mm(appId), `${appPath(appId)}/egress-ips`, ipr(appId), `${appPath(appId)}/access-logs`, tcp(appId), pp(appId)];

for (const kind of DB_KINDS) {
  describe(`applications: settings [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    it('maintenance mode: off by default; on with an https page; page kept when omitted, cleared with null', async () => {
      const a = await createApp(s);
      assert.deepEqual(expectStatus(await s.get(mm(a.id)), 200), { is_enabled: false, page_url: null });
      assert.deepEqual(expectStatus(await s.put(mm(a.id), { is_enabled: true, page_url: 'https://status.example.com/maintenance' }), 200), {
        is_enabled: true,
        page_url: 'https://status.example.com/maintenance',
      });
      assert.deepEqual(expectStatus(await s.get(mm(a.id)), 200), { is_enabled: true, page_url: 'https://status.example.com/maintenance' });
      assert.deepEqual(expectStatus(await s.put(mm(a.id), { is_enabled: false }), 200), {
        is_enabled: false,
        page_url: 'https://status.example.com/maintenance',
      });
      assert.deepEqual(expectStatus(await s.put(mm(a.id), { is_enabled: true, page_url: null }), 200), { is_enabled: true, page_url: null });
    });

    it('maintenance mode: a page URL that is not https, or a malformed body, is 400 and changes nothing', async () => {
      const a = await createApp(s);
      for (const page_url of ['http://status.example.com/', 'ftp://example.com/page', 'not a url', 'https://', '']) {
        expectError(await s.put(mm(a.id), { is_enabled: true, page_url }), 400);
      }
      expectError(await s.put(mm(a.id), { page_url: 'https://example.com/' }), 400);
      expectError(await s.put(mm(a.id), { is_enabled: 'yes' }), 400);
      expectError(await s.put(mm(a.id), { is_enabled: true, extra: 1 }), 400);
      assert.deepEqual(expectStatus(await s.get(mm(a.id)), 200), { is_enabled: false, page_url: null });
    });

    it('egress IPs: published IPv4 ranges in most regions, one fixed address in others; stable per region', async () => {
      const a = await createApp(s);
      const b = await createApp(s);
      const ranges = expectStatus(await s.get(`${appPath(a.id)}/egress-ips`), 200).egress_ips as string[];
      assert.ok(!FIXED_EGRESS_REGIONS.has(DEFAULT_CLUSTER.name));
      assert.ok(ranges.length >= 2, JSON.stringify(ranges));
      for (const r of ranges) assert.match(r, /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\/\d{1,2}$/);
      assert.deepEqual(expectStatus(await s.get(`${appPath(b.id)}/egress-ips`), 200).egress_ips, ranges, 'same region, same addresses');
      const fixedCluster = CLUSTERS.find((c) => FIXED_EGRESS_REGIONS.has(c.name))!;
      const f = await createApp(s, { extra: { cluster_id: fixedCluster.id } });
      const fixed = expectStatus(await s.get(`${appPath(f.id)}/egress-ips`), 200).egress_ips as string[];
      assert.equal(fixed.length, 1);
      assert.match(fixed[0]!, /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/);
    });

    it('IP restriction: deny/disabled/empty by default; one list at a time; addresses and CIDR ranges (v4 and v6), trimmed and de-duplicated', async () => {
      const a = await createApp(s);
      assert.deepEqual(expectStatus(await s.get(ipr(a.id)), 200), { type: 'deny', is_enabled: false, ip_list: [] });
      const list = ['203.0.113.7', ' 198.51.100.0/24 ', '2001:db8::/32', '2001:db8::1', '203.0.113.7'];
      assert.deepEqual(expectStatus(await s.put(ipr(a.id), { type: 'allow', is_enabled: true, ip_list: list }), 200), {
        type: 'allow',
        is_enabled: true,
        ip_list: ['203.0.113.7', '198.51.100.0/24', '2001:db8::/32', '2001:db8::1'],
      });
      assert.deepEqual(expectStatus(await s.put(ipr(a.id), { type: 'deny', is_enabled: true, ip_list: ['192.0.2.0/28'] }), 200), {
        type: 'deny',
        is_enabled: true,
        ip_list: ['192.0.2.0/28'],
      });
      assert.deepEqual(
        expectStatus(await s.get(ipr(a.id)), 200),
        { type: 'deny', is_enabled: true, ip_list: ['192.0.2.0/28'] },
        'the deny list replaced the allow list',
      );
    });

    it('IP restriction: invalid addresses or ranges and malformed bodies are 400 and change nothing', async () => {
      const a = await createApp(s);
      for (const bad of ['999.1.1.1', '10.0.0.0/33', '10.0.0.0/', '2001:db8::/129', 'example.com', '10.0.0.1/8/1', '10.0.0.0/-1']) {
        const m = expectError(await s.put(ipr(a.id), { type: 'allow', is_enabled: true, ip_list: ['10.0.0.1', bad] }), 400);
        assert.ok(m.includes(bad), m);
      }
      expectError(await s.put(ipr(a.id), { type: 'both', is_enabled: true, ip_list: [] }), 400);
      expectError(await s.put(ipr(a.id), { type: 'allow', ip_list: [] }), 400);
      expectError(await s.put(ipr(a.id), { type: 'allow', is_enabled: true, ip_list: ['1'.repeat(46)] }), 400);
      assert.deepEqual(expectStatus(await s.get(ipr(a.id)), 200), { type: 'deny', is_enabled: false, ip_list: [] });
    });

    it('a settings change writes only what it changes, and the CDN toggle flips what is committed (PostgreSQL)', { skip: kind !== 'postgres' }, async () => {
      const a = await createApp(s);
      expectStatus(await s.put(mm(a.id), { is_enabled: false }), 200);
      const held = (set: { maintenance_enabled?: number; cdn_enabled?: number }) => (tx: Tx) =>
        tx.updateTable('application_settings').set(set).where('app_id', '=', a.id).execute();
      // Another writer turns maintenance mode on while the IP restriction is being changed.
      const ip = await whileRowsHeld(s, held({ maintenance_enabled: 1 }), () => s.put(ipr(a.id), { type: 'allow', is_enabled: true, ip_list: ['10.0.0.1'] }));
      assert.deepEqual(expectStatus(ip, 200), { type: 'allow', is_enabled: true, ip_list: ['10.0.0.1'] });
      assert.deepEqual(expectStatus(await s.get(mm(a.id)), 200), { is_enabled: true, page_url: null });
      // Another writer turns the CDN on while a toggle waits: the toggle turns it off again.
      const toggled = await whileRowsHeld(s, held({ cdn_enabled: 1 }), () => s.post(`${appPath(a.id)}/cdn/toggle`));
      assert.deepEqual(expectStatus(toggled, 200), { is_turned_on: false });
      assert.deepEqual(expectStatus(await s.get(mm(a.id)), 200), { is_enabled: true, page_url: null });
      assert.deepEqual(expectStatus(await s.get(ipr(a.id)), 200), { type: 'allow', is_enabled: true, ip_list: ['10.0.0.1'] });
    });

    it('CDN toggle flips on and off; purge-cache answers a message', async () => {
      const a = await createApp(s);
      assert.deepEqual(expectStatus(await s.post(`${appPath(a.id)}/cdn/toggle`), 200), { is_turned_on: true });
      assert.deepEqual(expectStatus(await s.post(`${appPath(a.id)}/cdn/toggle`), 200), { is_turned_on: false });
      assert.equal(typeof expectStatus(await s.post(`${appPath(a.id)}/purge-cache`), 200).message, 'string');
    });

    it('access logs: empty before the first successful deployment; afterwards deterministic request lines, filters and limit', async () => {
      const a = await createApp(s, { kind: 'image' });
      const now = Date.now();
      const win = `from=${new Date(now - 10 * 60_000).toISOString()}&to=${new Date(now + 10 * 60_000).toISOString()}`;
      assert.deepEqual(expectStatus(await s.get(`${appPath(a.id)}/access-logs?${win}`), 200), []);
      assert.deepEqual(expectStatus(await s.get(`${appPath(a.id)}/access-logs`), 200), []);
      const d = await deploy(s, a.id);
      const lines = expectStatus(await s.get(`${appPath(a.id)}/access-logs?${win}&limit=5000`), 200) as any[];
      assert.ok(lines.length > 0, 'requests after the deployment');
      const started = Date.parse(d.finished_at ?? d.updated_at);
      for (const l of lines) {
        assert.ok(l.unix_timestamp * 1000 >= started - 1, `line at ${l.timestamp} is not before the first deployment (${d.finished_at})`);
        assert.match(l.message, /"(GET|POST) \/\S* HTTP\/1\.1" \d{3} /);
        assert.ok(['info', 'warning', 'error'].includes(l.severity));
        assert.equal(l.tags.kind, 'access');
      }
      for (let i = 1; i < lines.length; i++) assert.ok(lines[i].unix_timestamp >= lines[i - 1].unix_timestamp, 'oldest first');
      assert.deepEqual(expectStatus(await s.get(`${appPath(a.id)}/access-logs?${win}&limit=5000`), 200), lines, 'deterministic');
      const limited = expectStatus(await s.get(`${appPath(a.id)}/access-logs?${win}&limit=3`), 200) as any[];
      assert.deepEqual(limited, lines.slice(-3), 'the newest lines');
      const login = expectStatus(await s.get(`${appPath(a.id)}/access-logs?${win}&filters=${encodeURIComponent('/login')}`), 200) as any[];
      assert.ok(login.length > 0 && login.every((l) => l.message.includes('/login')));
      expectError(await s.get(`${appPath(a.id)}/access-logs?from=${new Date(now).toISOString()}&to=${new Date(now - 60_000).toISOString()}`), 400);
      expectError(await s.get(`${appPath(a.id)}/access-logs?limit=0`), 400);
      expectError(await s.get(`${appPath(a.id)}/access-logs?from=yesterday`), 400);
    });

    it('TCP proxies: create on the web process (external port 30000-30999, unique per region), list, delete; 400s for bad input', async () => {
      const a = await createApp(s);
      const web = await webProcess(s, a.id);
      const p1 = expectStatus(await s.post(tcp(a.id), { process_id: web.id, port: 5432 }), 201);
      assert.match(p1.id, UUID_RE);
      assert.equal(p1.app_id, a.id);
      assert.equal(p1.process_id, web.id);
      assert.equal(p1.port, 5432);
      assert.ok(p1.external_port >= 30000 && p1.external_port <= 30999);
      assert.ok(p1.hostname.includes(DEFAULT_CLUSTER.name), p1.hostname);
      const p2 = expectStatus(await s.post(tcp(a.id), { process_id: web.id, port: 6379 }), 201);
      assert.notEqual(p2.external_port, p1.external_port);
      expectError(await s.post(tcp(a.id), { process_id: web.id, port: 5432 }), 400, /already/);
      expectError(await s.post(tcp(a.id), { process_id: MISSING, port: 1234 }), 400, /process_id/);
      expectError(await s.post(tcp(a.id), { process_id: web.id, port: 0 }), 400);
      expectError(await s.post(tcp(a.id), { process_id: web.id, port: 65536 }), 400);
      expectError(await s.post(tcp(a.id), { process_id: 'nope', port: 80 }), 400);
      const other = await createApp(s);
      expectError(await s.post(tcp(a.id), { process_id: (await webProcess(s, other.id)).id, port: 80 }), 400, /process_id/);
      const list = expectStatus(await s.get(tcp(a.id)), 200);
      assert.equal(list.total, 2);
      assert.deepEqual(
        list.data.map((p: any) => p.id),
        [p1.id, p2.id],
      );
      assert.deepEqual(list.data[0], p1);
      expectStatus(await s.delete(`${tcp(a.id)}/${p1.id}`), 200);
      expectError(await s.delete(`${tcp(a.id)}/${p1.id}`), 404);
      expectError(await s.delete(`${tcp(other.id)}/${p2.id}`), 404, undefined);
      assert.deepEqual(
        (await listAll(s, tcp(a.id))).map((p) => p.id),
        [p2.id],
      );
      const p3 = expectStatus(await s.post(tcp(a.id), { process_id: web.id, port: 5432 }), 201);
      assert.equal(p3.external_port, p1.external_port, 'the released external port is reused');
    });

    it('private ports: create, list, delete; 400s for duplicates, unknown processes and bad ports', async () => {
      const a = await createApp(s);
      const web = await webProcess(s, a.id);
      const p = expectStatus(await s.post(pp(a.id), { process_id: web.id, port: 9000 }), 201);
      assert.deepEqual(Object.keys(p).sort(), ['app_id', 'created_at', 'id', 'port', 'process_id', 'status', 'updated_at']);
      assert.equal(p.port, 9000);
      expectError(await s.post(pp(a.id), { process_id: web.id, port: 9000 }), 400, /already/);
      expectError(await s.post(pp(a.id), { process_id: MISSING, port: 9001 }), 400, /process_id/);
      expectError(await s.post(pp(a.id), { process_id: web.id, port: 70000 }), 400);
      expectError(await s.post(pp(a.id), { port: 9001 }), 400);
      assert.deepEqual(
        (await listAll(s, pp(a.id))).map((x) => x.id),
        [p.id],
      );
      expectStatus(await s.delete(`${pp(a.id)}/${p.id}`), 200);
      expectError(await s.delete(`${pp(a.id)}/${p.id}`), 404);
      assert.equal(expectStatus(await s.get(pp(a.id)), 200).total, 0);
    });

    it('a Viewer key reads every setting but every write is 403 naming APP:UPDATE', async () => {
      const viewer = (await s.newKey({ role: 'Company Viewer' })).token;
      const a = await createApp(s);
      const web = await webProcess(s, a.id);
      for (const path of reads(a.id)) assert.equal((await s.get(path, { token: viewer })).status, 200, path);
      for (const [method, path, body] of writes(a.id, web.id)) {
        const m = expectError(await s.request(method, path, { body, token: viewer }), 403);
        assert.ok(m.includes('APP:UPDATE'), `${method} ${path}: ${m}`);
      }
      assert.deepEqual(expectStatus(await s.get(mm(a.id)), 200), { is_enabled: false, page_url: null });
      assert.equal(expectStatus(await s.get(tcp(a.id)), 200).total, 0);
    });

    it("another company's key gets 404 on every settings route of the application", async () => {
      const { token } = await s.newCompany();
      const a = await createApp(s);
      const web = await webProcess(s, a.id);
      for (const path of reads(a.id)) expectError(await s.get(path, { token }), 404);
      for (const [method, path, body] of writes(a.id, web.id)) expectError(await s.request(method, path, { body, token }), 404);
      for (const path of reads(MISSING)) expectError(await s.get(path), 404);
      assert.deepEqual(expectStatus(await s.get(ipr(a.id)), 200), { type: 'deny', is_enabled: false, ip_list: [] });
    });

    it('while the application is being deleted every settings write is 400; once deleted its settings rows are gone', async () => {
      const a = await createApp(s);
      const web = await webProcess(s, a.id);
      expectStatus(await s.put(mm(a.id), { is_enabled: true, page_url: 'https://example.com/down' }), 200);
      expectStatus(await s.put(ipr(a.id), { type: 'allow', is_enabled: true, ip_list: ['10.0.0.0/8'] }), 200);
      const proxy = expectStatus(await s.post(tcp(a.id), { process_id: web.id, port: 2222 }), 201);
      const port = expectStatus(await s.post(pp(a.id), { process_id: web.id, port: 3333 }), 201);
      await setProgression(s, 'app_delete', { mode: 'reads', reads: 1 });
      try {
        expectStatus(await s.delete(appPath(a.id)), 200);
        for (const [method, path, body] of writes(a.id, web.id)) {
          const p = path.replace(MISSING, path.includes('tcp-proxies') ? proxy.id : port.id);
          expectError(await s.request(method, p, { body, token: undefined }), 400, /being deleted/);
        }
        assert.equal(expectStatus(await s.get(mm(a.id)), 200).is_enabled, true, 'reads still answer while deleting');
      } finally {
        await setProgression(s, 'app_delete', { mode: 'immediate' });
      }
      await waitFor('application deleted', async () => (await s.get(appPath(a.id))).status === 404);
      const db = s.app.database.db;
      for (const table of ['application_settings', 'application_tcp_proxies', 'application_private_ports'] as const) {
        const n = Number(
          (
            await db
              .selectFrom(table)
              .select((eb) => eb.fn.countAll().as('n'))
              .where('app_id', '=', a.id)
              .executeTakeFirst()
          )?.n ?? 0,
        );
        assert.equal(n, 0, `${table} rows of the deleted application`);
      }
      for (const path of reads(a.id)) expectError(await s.get(path), 404);
    });
  });

  describe(`applications: settings rate tiers [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: { ...GENEROUS, service_mutation: 1, general_write: 3 }, env: IMMEDIATE_ENV });

    it('service_mutation is counted per operation and application: the second PUT on app A is 429 (retry-after), app B is unaffected', async () => {
      const a = await createApp(s);
      const b = await createApp(s);
      const second: [string, (id: string) => string, unknown?][] = [
        ['PUT', mm, { is_enabled: true }],
        ['PUT', ipr, { type: 'deny', is_enabled: true, ip_list: ['192.0.2.1'] }],
        ['POST', (id) => `${appPath(id)}/cdn/toggle`],
        ['POST', (id) => `${appPath(id)}/purge-cache`],
      ];
      for (const [method, path, body] of second) {
        expectStatus(await s.request(method, path(a.id), { body }), 200);
        const r = await s.request(method, path(a.id), { body });
        expectError(r, 429);
        assert.ok(r.headers.get('retry-after'), 'retry-after on 429');
        expectStatus(await s.request(method, path(b.id), { body }), 200);
      }
      // Reads are not counted in service_mutation.
      assert.deepEqual(expectStatus(await s.get(mm(a.id)), 200), { is_enabled: true, page_url: null });
      assert.deepEqual(expectStatus(await s.get(ipr(b.id)), 200), { type: 'deny', is_enabled: true, ip_list: ['192.0.2.1'] });
    });

    it('TCP proxy and private port writes count in general_write (per company and operation)', async () => {
      const a = await createApp(s);
      const b = await createApp(s);
      const web = await webProcess(s, a.id);
      const webB = await webProcess(s, b.id);
      for (const port of [1000, 1001, 1002]) expectStatus(await s.post(tcp(a.id), { process_id: web.id, port }), 201);
      expectError(await s.post(tcp(b.id), { process_id: webB.id, port: 1003 }), 429);
      expectStatus(await s.post(pp(a.id), { process_id: web.id, port: 1000 }), 201);
    });
  });
}
