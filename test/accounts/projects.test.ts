// Projects: create (generated unique names), get with services, update, delete, list, and
// adding/removing services through the service registry.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll, MISSING, UUID_RE } from '../helpers/util.js';
import type { ServiceSummary } from '../../src/shared/services.js';
import { SCHEMA_MISMATCH } from './support.js';

const SERVICE_TYPES = ['app', 'database', 'pipeline', 'object-storage'] as const;

interface Project {
  id: string;
  company_id: string;
  name: string;
  display_name: string;
  created_at: string;
  updated_at: string;
  services?: { id: string; name: string; display_name: string; type: string }[];
}

for (const kind of DB_KINDS) {
  describe(`projects [${kind}]`, { skip: await skipUnless(kind) }, () => {
    // A stand-in service kind, registered on this server only, so adding and removing services
    // can be exercised before the real service modules exist. It knows the services below.
    let stubType: (typeof SERVICE_TYPES)[number];
    let unavailableType: (typeof SERVICE_TYPES)[number] | undefined;
    const stubServices = new Map<string, ServiceSummary & { companyId: string }>();
    /** The ids each call of the stub kind's `summaries` was given. */
    const summaryCalls: string[][] = [];

    const s = useServer({ db: kind, rateLimits: { general_write: 1000 } });
    before(async () => {
      unavailableType = SERVICE_TYPES.find((t) => !s.app.services.get(t));
      stubType = SERVICE_TYPES.filter((t) => t !== unavailableType).at(-1)!;
      s.app.services.register({
        type: stubType,
        summaries: async ({ companyId }, ids) => {
          summaryCalls.push([...ids]);
          return ids.flatMap((id) => {
            const svc = stubServices.get(id);
            return svc && svc.companyId === companyId ? [{ id: svc.id, name: svc.name, display_name: svc.display_name }] : [];
          });
        },
      });
    });

    const createProject = async (display_name: string, token?: string) => {
      const r = await s.post('/projects', { display_name }, { token });
      expectStatus(r, 201);
      return r.body as Project;
    };
    const stubService = (display_name: string, companyId = s.companyId) => {
      const svc = { id: randomUUID(), name: display_name.toLowerCase().replace(/\W+/g, '-'), display_name, companyId };
      stubServices.set(svc.id, svc);
      return svc;
    };

    it('creates a project with a name generated from display_name; equal display names get different names', async () => {
      const r = await s.post('/projects', { display_name: 'My Shop' });
      const a = expectStatus(r, 201) as Project;
      assert.deepEqual(Object.keys(a).sort(), ['company_id', 'created_at', 'display_name', 'id', 'name', 'updated_at']);
      assert.match(a.id, UUID_RE);
      assert.equal(a.company_id, s.companyId);
      assert.equal(a.display_name, 'My Shop');
      assert.equal(a.name, 'my-shop');
      assert.equal(a.created_at, a.updated_at);

      const b = await createProject('My Shop');
      assert.notEqual(b.id, a.id);
      assert.notEqual(b.name, a.name, 'names are unique within the company');
      assert.match(b.name, /^my-shop-[a-z0-9]+$/);
      assert.equal(b.display_name, 'My Shop');
      const c = await createProject('My Shop');
      assert.equal(new Set([a.name, b.name, c.name]).size, 3);

      const odd = await createProject('  Café  Déjà Vu!! 2026 ');
      assert.match(odd.name, /^[a-z0-9]+(-[a-z0-9]+)*$/, 'the name is URL-safe');
      assert.equal(odd.name, 'cafe-deja-vu-2026');
      assert.equal(odd.display_name, '  Café  Déjà Vu!! 2026 ', 'display_name is kept as given');

      // Names are unique per company, not globally.
      const other = await s.newCompany();
      const theirs = await createProject('My Shop', other.token);
      assert.equal(theirs.name, 'my-shop');
      assert.equal(theirs.company_id, other.companyId);
    });

    it('a creation is one statement: on PostgreSQL without a transaction unless it carries an Idempotency-Key', async () => {
      const db = s.app.database.db;
      const transaction = db.transaction.bind(db);
      // Only the transactions the router itself opens count (db.transaction's caller is in
      // router.ts): a background job (a webhook delivery, a sweep, the backup-retention job at
      // start-up) may open one of its own at any moment. Counting every stack that named the
      // router anywhere still counted one transaction too many on a loaded CI run; the callers
      // counted are in the assertions' messages.
      const callers: string[] = [];
      db.transaction = () => {
        const caller = (new Error().stack ?? '').split('\n')[2] ?? '';
        if (/shared[\\/]http[\\/]router\.ts/.test(caller)) callers.push(caller.trim());
        return transaction();
      };
      try {
        const a = await createProject('Single write');
        const b = await createProject('Single write');
        assert.notEqual(a.name, b.name, 'a taken name is still replaced');
        assert.equal(callers.length, kind === 'postgres' ? 0 : 2, `transactions opened without a key: ${callers.join('; ')}`);
        callers.length = 0;
        const headers = { 'idempotency-key': randomUUID() };
        const first = await s.post('/projects', { display_name: 'Keyed write' }, { headers });
        const again = await s.post('/projects', { display_name: 'Keyed write' }, { headers });
        expectStatus(first, 201);
        expectStatus(again, 201);
        assert.equal(again.headers.get('idempotent-replayed'), 'true');
        assert.deepEqual(again.body, first.body);
        assert.equal(callers.length, 1, `the keyed creation ran in a transaction (its replay in none): ${callers.join('; ')}`);
        const names = (await listAll<Project>(s, '/projects')).filter((p) => p.display_name === 'Keyed write');
        assert.equal(names.length, 1);
      } finally {
        db.transaction = transaction;
      }
    });

    it('concurrent creations with one display name all succeed with distinct names', async () => {
      const rs = await Promise.all(Array.from({ length: 8 }, () => s.post('/projects', { display_name: 'Race Day' })));
      for (const r of rs) expectStatus(r, 201);
      const names = rs.map((r) => r.body.name as string);
      assert.equal(new Set(names).size, names.length, `names are distinct: ${names.join(', ')}`);
      for (const n of names) assert.match(n, /^race-day(-[a-z0-9]+)?$/);
      const listed = (await listAll<Project>(s, '/projects')).filter((p) => p.display_name === 'Race Day');
      assert.deepEqual(listed.map((p) => p.name).sort(), [...names].sort());
    });

    it('gets a project with its (empty) services; 404 for unknown or foreign projects', async () => {
      const p = await createProject('Getter');
      const r = await s.get(`/projects/${p.id}`);
      const g = expectStatus(r, 200) as Project;
      assert.deepEqual(g, { ...p, services: [] });

      expectError(await s.get(`/projects/${MISSING}`), 404);
      const other = await s.newCompany();
      const foreign = await createProject('Foreign', other.token);
      expectError(await s.get(`/projects/${foreign.id}`), 404);
      expectError(await s.get(`/projects/${p.id}`, { token: other.token }), 404);
      const bad = await s.get('/projects/not-a-uuid');
      expectError(bad, 400, SCHEMA_MISMATCH);
      assert.ok(
        bad.body.data.issues.some((i: { path: string }) => i.path.startsWith('params')),
        'the issue names the path parameter',
      );
    });

    it('lists the company projects with pagination', async () => {
      const other = await s.newCompany();
      const foreign = await createProject('Not mine', other.token);
      const made = [await createProject('List A'), await createProject('List B'), await createProject('List C')];
      const all = await listAll<Project>(s, '/projects');
      for (const m of made) {
        const item = all.find((x) => x.id === m.id);
        assert.ok(item, `${m.display_name} is listed`);
        assert.deepEqual(item, { id: m.id, name: m.name, display_name: m.display_name, created_at: m.created_at, updated_at: m.updated_at });
      }
      assert.ok(!all.some((x) => x.id === foreign.id), 'other companies’ projects are not listed');
      const theirs = await listAll<Project>(s, '/projects', other.token);
      assert.deepEqual(
        theirs.map((x) => x.id),
        [foreign.id],
      );

      const first = await s.get('/projects?limit=2&offset=0');
      expectStatus(first, 200);
      assert.equal(first.body.limit, 2);
      assert.equal(first.body.offset, 0);
      assert.equal(first.body.total, all.length);
      assert.equal(first.body.data.length, 2);
      const second = await s.get('/projects?limit=2&offset=2');
      assert.equal(second.body.offset, 2);
      assert.deepEqual(
        [...first.body.data, ...second.body.data].map((x: Project) => x.id),
        all.slice(0, 4).map((x) => x.id),
        'pages follow one stable order',
      );
      const beyond = await s.get(`/projects?offset=${all.length}`);
      assert.deepEqual(beyond.body.data, []);
      assert.equal(beyond.body.total, all.length);
      for (const q of ['limit=0', 'limit=101', 'offset=-1', 'offset=10001', 'limit=abc']) expectError(await s.get(`/projects?${q}`), 400, SCHEMA_MISMATCH);
    });

    it('updates display_name and keeps the name', async () => {
      const p = await createProject('Before');
      const r = await s.patch(`/projects/${p.id}`, { display_name: 'After' });
      const u = expectStatus(r, 200) as Project;
      assert.equal(u.id, p.id);
      assert.equal(u.display_name, 'After');
      assert.equal(u.name, p.name, 'the name does not follow the display name');
      assert.equal(u.created_at, p.created_at);
      assert.ok(u.updated_at >= p.updated_at);
      const g = await s.get(`/projects/${p.id}`);
      assert.equal(g.body.display_name, 'After');
      assert.equal(g.body.updated_at, u.updated_at);
      assert.equal((await listAll<Project>(s, '/projects')).find((x) => x.id === p.id)?.display_name, 'After');
      expectError(await s.patch(`/projects/${MISSING}`, { display_name: 'Ghost' }), 404);
    });

    it('rejects invalid display names with 400 and stores nothing', async () => {
      const before = (await s.get('/projects')).body.total;
      for (const body of [
        { display_name: '' },
        { display_name: 'x'.repeat(65) },
        {},
        { display_name: 42 },
        { display_name: null },
        { display_name: 'ok', name: 'forced' },
      ]) {
        expectError(await s.post('/projects', body), 400, SCHEMA_MISMATCH);
      }
      expectError(await s.post('/projects'), 400, SCHEMA_MISMATCH);
      expectError(await s.request('POST', '/projects', { raw: '{"display_name":' }), 400);
      assert.equal((await s.get('/projects')).body.total, before, 'nothing was created');

      const longest = await createProject('y'.repeat(64));
      assert.equal(longest.display_name.length, 64);

      const p = await createProject('Valid');
      expectError(await s.patch(`/projects/${p.id}`, { display_name: '' }), 400, SCHEMA_MISMATCH);
      expectError(await s.patch(`/projects/${p.id}`, { display_name: 'z'.repeat(65) }), 400, SCHEMA_MISMATCH);
      expectError(await s.patch(`/projects/${p.id}`, {}), 400, SCHEMA_MISMATCH);
      assert.equal((await s.get(`/projects/${p.id}`)).body.display_name, 'Valid');
    });

    it('deletes a project: then 404 and not listed', async () => {
      const p = await createProject('Short lived');
      const d = await s.delete(`/projects/${p.id}`);
      expectStatus(d, 200);
      assert.equal(typeof d.body.message, 'string');
      expectError(await s.get(`/projects/${p.id}`), 404);
      assert.ok(!(await listAll<Project>(s, '/projects')).some((x) => x.id === p.id));
      expectError(await s.delete(`/projects/${p.id}`), 404);
      expectError(await s.patch(`/projects/${p.id}`, { display_name: 'Back' }), 404);
      // Its name is free again.
      const again = await createProject('Short lived');
      assert.equal(again.name, p.name);
    });

    it('enforces PROJECT permissions and resource scope', async () => {
      const p = await createProject('Guarded');
      const q = await createProject('Hidden');
      const viewer = await s.newKey({ role: 'Company Viewer' });
      expectStatus(await s.get(`/projects/${p.id}`, { token: viewer.token }), 200);
      expectError(await s.post('/projects', { display_name: 'nope' }, { token: viewer.token }), 403, /PROJECT:CREATE/);
      expectError(await s.patch(`/projects/${p.id}`, { display_name: 'nope' }, { token: viewer.token }), 403, /PROJECT:UPDATE/);
      expectError(await s.delete(`/projects/${p.id}`, { token: viewer.token }), 403, /PROJECT:DELETE/);
      const billing = await s.newKey({ role: 'Company Billing' });
      expectError(await s.get('/projects', { token: billing.token }), 403, /PROJECT:READ/);

      const scoped = await s.newKey({
        capabilities: [
          { permission: 'PROJECT:READ', id_resource: p.id },
          { permission: 'PROJECT:UPDATE', id_resource: p.id },
        ],
      });
      const l = await s.get('/projects', { token: scoped.token });
      expectStatus(l, 200);
      assert.deepEqual(
        l.body.data.map((x: Project) => x.id),
        [p.id],
      );
      assert.equal(l.body.total, 1);
      expectStatus(await s.get(`/projects/${p.id}`, { token: scoped.token }), 200);
      expectError(await s.get(`/projects/${q.id}`, { token: scoped.token }), 404);
      expectStatus(await s.patch(`/projects/${p.id}`, { display_name: 'Guarded 2' }, { token: scoped.token }), 200);
      expectError(await s.patch(`/projects/${q.id}`, { display_name: 'Nope' }, { token: scoped.token }), 404);
      assert.equal((await s.get(`/projects/${q.id}`)).body.display_name, 'Hidden');
    });

    it('refuses a service type that no module provides yet', async (t) => {
      if (!unavailableType) return t.skip('every service type is provided by a module');
      const p = await createProject('Typed');
      const r = await s.post(`/projects/${p.id}/services`, { service_id: randomUUID(), service_type: unavailableType });
      expectError(r, 400, new RegExp(`"${unavailableType}" is not available`));
      expectError(await s.delete(`/projects/${p.id}/services/${randomUUID()}?service_type=${unavailableType}`), 400, /not available/);
      assert.deepEqual((await s.get(`/projects/${p.id}`)).body.services, []);
    });

    it("a project's services of one kind are read together, not one by one", async () => {
      const p = await createProject('Many services');
      const added = ['Alpha', 'Beta', 'Gamma'].map((n) => stubService(`${n} service`));
      for (const svc of added) expectStatus(await s.post(`/projects/${p.id}/services`, { service_id: svc.id, service_type: stubType }), 200);
      summaryCalls.length = 0;
      const g = expectStatus(await s.get(`/projects/${p.id}`), 200);
      assert.deepEqual(g.services.map((x: { id: string }) => x.id).sort(), added.map((x) => x.id).sort());
      assert.equal(summaryCalls.length, 1, 'one call for the kind');
      assert.deepEqual([...summaryCalls[0]!].sort(), added.map((x) => x.id).sort());
    });

    it('adds and removes services; the project lists them', async () => {
      const p = await createProject('With services');
      const one = stubService('Shop Frontend');
      const two = stubService('Shop Backend');
      const add = await s.post(`/projects/${p.id}/services`, { service_id: one.id, service_type: stubType });
      expectStatus(add, 200);
      assert.equal(typeof add.body.message, 'string');
      expectStatus(await s.post(`/projects/${p.id}/services`, { service_id: two.id, service_type: stubType }), 200);
      // Adding the same service again changes nothing.
      expectStatus(await s.post(`/projects/${p.id}/services`, { service_id: one.id, service_type: stubType }), 200);

      const g = await s.get(`/projects/${p.id}`);
      expectStatus(g, 200);
      assert.deepEqual(
        [...g.body.services].sort((a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id)),
        [one, two].map((x) => ({ id: x.id, name: x.name, display_name: x.display_name, type: stubType })).sort((a, b) => a.id.localeCompare(b.id)),
      );

      const rm = await s.delete(`/projects/${p.id}/services/${one.id}?service_type=${stubType}`);
      expectStatus(rm, 200);
      assert.equal(typeof rm.body.message, 'string');
      assert.deepEqual(
        (await s.get(`/projects/${p.id}`)).body.services.map((x: { id: string }) => x.id),
        [two.id],
      );
      // Removing it again: it is no longer in the project.
      expectError(await s.delete(`/projects/${p.id}/services/${one.id}?service_type=${stubType}`), 404);
      expectError(await s.delete(`/projects/${p.id}/services/${randomUUID()}?service_type=${stubType}`), 404);
      expectError(await s.delete(`/projects/${p.id}/services/${two.id}`), 400, SCHEMA_MISMATCH);
      expectError(await s.delete(`/projects/${p.id}/services/${two.id}?service_type=nonsense`), 400, SCHEMA_MISMATCH);
      expectError(await s.delete(`/projects/${MISSING}/services/${two.id}?service_type=${stubType}`), 404);

      // A service must exist in the caller's company.
      const other = await s.newCompany();
      const foreign = stubService('Foreign Service', other.companyId);
      expectError(await s.post(`/projects/${p.id}/services`, { service_id: foreign.id, service_type: stubType }), 404);
      expectError(await s.post(`/projects/${p.id}/services`, { service_id: randomUUID(), service_type: stubType }), 404);
      expectError(await s.post(`/projects/${MISSING}/services`, { service_id: two.id, service_type: stubType }), 404);
      for (const body of [{ service_id: 'nope', service_type: stubType }, { service_id: two.id, service_type: 'spaceship' }, { service_id: two.id }, {}]) {
        expectError(await s.post(`/projects/${p.id}/services`, body), 400, SCHEMA_MISMATCH);
      }
      assert.deepEqual(
        (await s.get(`/projects/${p.id}`)).body.services.map((x: { id: string }) => x.id),
        [two.id],
      );

      // Changing membership is a project update.
      const viewer = await s.newKey({ role: 'Company Viewer' });
      expectError(await s.post(`/projects/${p.id}/services`, { service_id: one.id, service_type: stubType }, { token: viewer.token }), 403, /PROJECT:UPDATE/);

      // Deleting the project releases its services; they can join another project.
      expectStatus(await s.delete(`/projects/${p.id}`), 200);
      const next = await createProject('Next home');
      expectStatus(await s.post(`/projects/${next.id}/services`, { service_id: two.id, service_type: stubType }), 200);
      assert.deepEqual(
        (await s.get(`/projects/${next.id}`)).body.services.map((x: { id: string }) => x.id),
        [two.id],
      );
    });
  });
}
