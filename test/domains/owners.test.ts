// The same domain operations for static sites and load balancers (through stand-in service kinds
// registered on the test server), concurrent claims of one hostname, and the public functions
// other modules use (claimHostname / releaseHostname for object storage, domainsOf, provisioning).
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, MISSING } from '../helpers/util.js';
import { systemCall } from '../../src/shared/context.js';
import { claimHostname, domainsOf, releaseHostname } from '../../src/modules/domains/service.js';
import { removeServiceDomains } from '../../src/modules/domains/registry.js';
import { addDomain, createApp, DOMAIN_KEYS, domainPath, domainsPath, host, LIMITS, listDomains, stubKind, type Domain } from './support.js';

const OWNERS = [
  { base: '/static-sites', type: 'static-site', label: 'Static site', resource: 'STATIC_SITE', system: /^site-\d+-[0-9a-f]{6}\.slipway\.site$/, deleted: 200 },
  {
    base: '/load-balancers',
    type: 'load-balancer',
    label: 'Load balancer',
    resource: 'LOAD_BALANCER',
    system: /^site-\d+-[0-9a-f]{6}\.lb\.slipway\.app$/,
    deleted: 204,
  },
] as const;

for (const kind of DB_KINDS) {
  describe(`domains of static sites and load balancers, concurrency, public functions [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: LIMITS, env: { SLIPWAY_SIM_PROGRESSION: 'domain_verification=immediate' } });
    const make: Record<string, (companyId?: string) => { id: string; name: string }> = {};
    let unregistered: string[] = [];
    before(async () => {
      unregistered = OWNERS.filter((o) => !s.app.services.get(o.type)).map((o) => o.base);
      // Until their modules exist, the operations answer 404 for every id.
      for (const base of unregistered) expectError(await s.get(domainsPath(MISSING, base)), 404);
      for (const o of OWNERS) make[o.type] = stubKind(s, o.type);
    });

    for (const o of OWNERS) {
      it(`${o.base}: list provisions the system domain; add, get, set-primary, refresh, toggle, rename and delete`, async () => {
        const svc = make[o.type]!();
        const [sys] = await listDomains(s, svc.id, o.base);
        assert.deepEqual(Object.keys(sys!).sort(), DOMAIN_KEYS);
        assert.match(sys!.name, o.system);
        assert.equal(sys!.name.startsWith(`${svc.name}-`), true);
        assert.deepEqual([sys!.type, sys!.status, sys!.is_primary, sys!.is_enabled], ['SYSTEM', 'ACTIVE', true, true]);
        assert.deepEqual(await listDomains(s, svc.id, o.base), [sys], 'provisioned once');

        const name = host(o.type);
        const d = await addDomain(s, svc.id, { domain_name: name }, o.base);
        assert.deepEqual([d.name, d.type, d.status, d.is_primary], [name, 'CUSTOM', 'VERIFICATION', false]);
        const got = expectStatus(await s.get(domainPath(svc.id, d.id, o.base)), 200) as Domain;
        assert.equal(got.status, 'ACTIVE');
        assert.match(expectStatus(await s.post(`${domainPath(svc.id, d.id, o.base)}/refresh-status`), 200).message, /is active/);
        expectStatus(await s.post(`${domainPath(svc.id, d.id, o.base)}/set-primary`), 200);
        assert.deepEqual(
          (await listDomains(s, svc.id, o.base)).filter((x) => x.is_primary).map((x) => x.id),
          [d.id],
        );
        assert.deepEqual(expectStatus(await s.post(`${domainPath(svc.id, sys!.id, o.base)}/toggle`), 200), { message: 'System domain disabled' });
        const renamed = expectStatus(await s.patch(domainPath(svc.id, sys!.id, o.base), { name: `${o.type}-${process.pid}` }), 200) as Domain;
        assert.equal(renamed.name, `${o.type}-${process.pid}.${sys!.name.split('.').slice(1).join('.')}`);
        expectError(await s.delete(domainPath(svc.id, sys!.id, o.base)), 400, /system domain cannot be deleted/);

        const del = await s.delete(domainPath(svc.id, d.id, o.base));
        assert.equal(del.status, o.deleted);
        if (o.deleted === 204) assert.equal(del.text, '');
        else assert.deepEqual(del.body, { message: 'Domain deleted' });
        const left = await listDomains(s, svc.id, o.base);
        assert.deepEqual(
          left.map((x) => [x.id, x.is_primary, x.is_enabled]),
          [[sys!.id, true, true]],
          'the system domain is primary (and on) again',
        );
        expectError(await s.get(domainPath(svc.id, d.id, o.base)), 404, 'Domain not found');
      });

      it(`${o.base}: unknown and foreign services are 404; ${o.resource} permissions guard the operations`, async () => {
        const svc = make[o.type]!();
        expectError(await s.get(domainsPath(MISSING, o.base)), 404, `${o.label} not found`);
        expectError(await s.post(domainsPath(MISSING, o.base), { domain_name: host() }), 404, `${o.label} not found`);
        const other = await s.newCompany();
        const theirs = make[o.type]!(other.companyId);
        expectError(await s.get(domainsPath(theirs.id, o.base)), 404);
        expectError(await s.get(domainsPath(svc.id, o.base), { token: other.token }), 404);
        assert.equal((await listDomains(s, theirs.id, o.base, other.token)).length, 1);

        const appOnly = await s.newKey({ capabilities: [{ permission: 'APP:READ' }, { permission: 'APP:UPDATE' }] });
        expectError(await s.get(domainsPath(svc.id, o.base), { token: appOnly.token }), 403, new RegExp(`${o.resource}:READ`));
        expectError(await s.post(domainsPath(svc.id, o.base), { domain_name: host() }, { token: appOnly.token }), 403, new RegExp(`${o.resource}:UPDATE`));
        const svc2 = make[o.type]!();
        const scoped = await s.newKey({
          capabilities: [
            { permission: `${o.resource}:READ`, id_resource: svc.id },
            { permission: `${o.resource}:UPDATE`, id_resource: svc.id },
          ],
        });
        expectStatus(await s.post(domainsPath(svc.id, o.base), { domain_name: host() }, { token: scoped.token }), 201);
        assert.equal((await listDomains(s, svc.id, o.base, scoped.token)).length, 2);
        expectError(await s.get(domainsPath(svc2.id, o.base), { token: scoped.token }), 404);
      });
    }

    it('a hostname is unique across owner types: an application, a static site and a load balancer cannot share one', async () => {
      const a = await createApp(s);
      const name = host('shared');
      await addDomain(s, a.id, { domain_name: name });
      for (const o of OWNERS) expectError(await s.post(domainsPath(make[o.type]!().id, o.base), { domain_name: name }), 400, /already in use/);
    });

    it('20 concurrent claims of one hostname from two companies: exactly one wins, the rest 400, none 500', async () => {
      const other = await s.newCompany();
      const name = host('race');
      const attempts = Array.from({ length: 20 }, (_, i) => {
        const mine = i % 2 === 0;
        const svc = make['static-site']!(mine ? s.companyId : other.companyId);
        return s.post(domainsPath(svc.id, '/static-sites'), { domain_name: name }, { token: mine ? s.token : other.token });
      });
      const results = await Promise.all(attempts);
      const statuses = results.map((r) => r.status);
      assert.deepEqual(statuses.filter((x) => x === 201).length, 1, `statuses: ${statuses.join(',')}`);
      assert.deepEqual(statuses.filter((x) => x === 400).length, 19, `statuses: ${statuses.join(',')}`);
      for (const r of results) if (r.status === 400) expectError(r, 400, /already in use/);
      const rows = await s.app.database.db.selectFrom('domains').select(['id', 'service_id']).where('hostname', '=', name).execute();
      assert.equal(rows.length, 1);
    });

    it('20 concurrent adds of one hostname to one service, and concurrent set-primary calls, leave one domain and one primary', async () => {
      const svc = make['load-balancer']!();
      const name = host('same');
      const results = await Promise.all(Array.from({ length: 20 }, () => s.post(domainsPath(svc.id, '/load-balancers'), { domain_name: name })));
      assert.deepEqual(results.map((r) => r.status).sort(), [201, ...Array(19).fill(400)]);
      const names = [host('p'), host('p'), host('p'), host('p')];
      const added = [];
      for (const n of names) added.push(await addDomain(s, svc.id, { domain_name: n }, '/load-balancers'));
      await listDomains(s, svc.id, '/load-balancers'); // verified on read (immediate progression)
      const primaries = await Promise.all(added.map((d) => s.post(`${domainPath(svc.id, d.id, '/load-balancers')}/set-primary`)));
      assert.deepEqual(
        primaries.map((r) => r.status),
        [200, 200, 200, 200],
      );
      const all = await listDomains(s, svc.id, '/load-balancers');
      assert.equal(all.filter((d) => d.is_primary).length, 1);
      assert.equal(all.length, 6);
    });

    it('concurrent first reads of a service provision exactly one system domain', async () => {
      const svc = make['static-site']!();
      const results = await Promise.all(Array.from({ length: 10 }, () => s.get(domainsPath(svc.id, '/static-sites'))));
      for (const r of results) expectStatus(r, 200);
      const ids = new Set(results.map((r) => r.body.data[0].id));
      assert.equal(ids.size, 1);
      const rows = await s.app.database.db.selectFrom('domains').select('id').where('service_id', '=', svc.id).execute();
      assert.equal(rows.length, 1);
    });

    it('claimHostname / releaseHostname: object storage holds a hostname uniquely; domainsOf and removeServiceDomains', async () => {
      const db = s.app.database.db;
      const bucket = randomUUID();
      const call = (companyId: string) => (fn: (ctx: ReturnType<typeof systemCall>) => Promise<unknown>) =>
        db.transaction().execute((tx) => fn(systemCall(s.app, tx, companyId)));
      const mine = call(s.companyId);
      const name = host('cdn');
      assert.equal(await mine((ctx) => claimHostname(ctx, name.toUpperCase(), { type: 'object-storage', id: bucket })), name);
      assert.equal(await mine((ctx) => claimHostname(ctx, name, { type: 'object-storage', id: bucket })), name, 'claiming again is a no-op');
      await assert.rejects(
        mine((ctx) => claimHostname(ctx, name, { type: 'object-storage', id: randomUUID() })),
        (e: Error & { status?: number }) => e.status === 400 && /already in use/.test(e.message),
      );
      await assert.rejects(
        mine((ctx) => claimHostname(ctx, 'https://x', { type: 'object-storage', id: bucket })),
        (e: Error & { status?: number }) => e.status === 400,
      );
      // A CDN hostname is not one of the services' domains, but nobody else can add it.
      const a = await createApp(s);
      expectError(await s.post(domainsPath(a.id), { domain_name: name }), 400, /already in use/);
      const other = await s.newCompany();
      await assert.rejects(
        call(other.companyId)((ctx) => claimHostname(ctx, name, { type: 'object-storage', id: randomUUID() })),
        (e: Error) => /not available/.test(e.message),
      );
      assert.deepEqual(
        (await domainsOf(db, bucket)).map((d) => [d.hostname, d.type, d.serving]),
        [[name, 'CDN', true]],
      );

      await mine((ctx) => releaseHostname(ctx, name, bucket));
      assert.deepEqual(await domainsOf(db, bucket), []);
      await addDomain(s, a.id, { domain_name: name });
      const edge = await domainsOf(db, a.id);
      assert.deepEqual(
        edge.map((d) => [d.type, d.is_primary, d.serving]),
        [
          ['SYSTEM', true, true],
          ['CUSTOM', false, false],
        ],
      );
      await db.transaction().execute((tx) => removeServiceDomains(s.app, tx, a.id));
      assert.deepEqual(await domainsOf(db, a.id), []);
    });
  });
}
