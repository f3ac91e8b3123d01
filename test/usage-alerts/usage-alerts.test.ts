import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, MISSING } from '../helpers/util.js';
import { billingPeriod, recordUsage } from '../../src/modules/usage-alerts/service.js';
import { systemCall } from '../../src/shared/context.js';

const body = (over: Record<string, unknown> = {}) => ({
  limit_usd: 200,
  emails: ['ops@example.com'],
  triggers: [{ percentage: 50 }, { percentage: 90 }],
  ...over,
});

for (const kind of DB_KINDS) {
  describe(`usage alerts [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS });

    /** A fresh company (the company-wide config is unique per company). */
    const company = async (role = 'Company Admin') => s.newCompany(role);
    const project = async (token: string) => expectStatus(await s.post('/projects', { display_name: 'Shop' }, { token }), 201).id as string;

    it('creates, lists, gets, updates and deletes configs', async () => {
      const { token, companyId } = await company();
      const c = expectStatus(await s.post('/usage-alerts', body({ triggers: [{ percentage: 90 }, { percentage: 50 }] }), { token }), 201);
      assert.equal(c.company_id, companyId);
      assert.equal(c.project_id, null);
      assert.equal(c.limit_usd, 200);
      assert.deepEqual(c.emails, ['ops@example.com']);
      assert.deepEqual(
        c.triggers.map((t: any) => t.percentage),
        [50, 90],
        'triggers ordered by percentage',
      );
      assert.ok(c.triggers.every((t: any) => t.last_fired_at === null));

      const pid = await project(token);
      const p = expectStatus(await s.post('/usage-alerts', body({ project_id: pid, limit_usd: 12.5 }), { token }), 201);
      assert.equal(p.project_id, pid);
      assert.equal(p.limit_usd, 12.5);

      const l = expectStatus(await s.get('/usage-alerts', { token }), 200);
      assert.equal(l.total, 2);
      assert.deepEqual(
        l.data.map((a: any) => a.id),
        [c.id, p.id],
      );
      assert.deepEqual(l.data[0], c);
      const f = expectStatus(await s.get(`/usage-alerts?project_id=${pid}`, { token }), 200);
      assert.deepEqual(
        f.data.map((a: any) => a.id),
        [p.id],
      );
      // A filter naming a project the key cannot see is answered like a path id.
      expectError(await s.get(`/usage-alerts?project_id=${MISSING}`, { token }), 404);
      assert.deepEqual(expectStatus(await s.get(`/usage-alerts/${p.id}`, { token }), 200), p);

      const u = expectStatus(await s.patch(`/usage-alerts/${c.id}`, { limit_usd: 500.25, emails: ['a@example.com', 'b@example.org'] }, { token }), 200);
      assert.equal(u.limit_usd, 500.25);
      assert.deepEqual(u.emails, ['a@example.com', 'b@example.org']);
      assert.deepEqual(u.triggers, c.triggers, 'triggers untouched');
      assert.equal(u.project_id, null);

      const t = expectStatus(await s.patch(`/usage-alerts/${c.id}`, { triggers: [{ percentage: 100 }] }, { token }), 200);
      assert.deepEqual(
        t.triggers.map((x: any) => x.percentage),
        [100],
      );
      assert.deepEqual(expectStatus(await s.get(`/usage-alerts/${c.id}`, { token }), 200), t);

      const d = await s.delete(`/usage-alerts/${c.id}`, { token });
      assert.equal(d.status, 204);
      assert.equal(d.text, '');
      expectError(await s.get(`/usage-alerts/${c.id}`, { token }), 404);
      expectError(await s.delete(`/usage-alerts/${c.id}`, { token }), 404);
      expectError(await s.patch(`/usage-alerts/${MISSING}`, { limit_usd: 1 }, { token }), 404);
      const rows = await s.app.database.db.selectFrom('usage_alert_triggers').select('id').where('alert_id', '=', c.id).execute();
      assert.equal(rows.length, 0, 'triggers deleted with the config');
      // A company-wide config can be created again once the previous one is gone.
      expectStatus(await s.post('/usage-alerts', body(), { token }), 201);
    });

    it('allows one company-wide config plus one per project (400 otherwise)', async () => {
      const { token } = await company();
      expectStatus(await s.post('/usage-alerts', body(), { token }), 201);
      expectError(await s.post('/usage-alerts', body({ project_id: null }), { token }), 400, /company-wide/);
      const pid = await project(token);
      expectStatus(await s.post('/usage-alerts', body({ project_id: pid }), { token }), 201);
      expectError(await s.post('/usage-alerts', body({ project_id: pid }), { token }), 400, /already has/);
    });

    it('requires the project to belong to the company (404, like a path id)', async () => {
      const a = await company();
      const b = await company();
      const foreign = await project(b.token);
      expectError(await s.post('/usage-alerts', body({ project_id: foreign }), { token: a.token }), 404);
      expectError(await s.post('/usage-alerts', body({ project_id: MISSING }), { token: a.token }), 404);
    });

    it('removes a project config with its project', async () => {
      const { token } = await company();
      const pid = await project(token);
      const p = expectStatus(await s.post('/usage-alerts', body({ project_id: pid }), { token }), 201);
      expectStatus(await s.delete(`/projects/${pid}`, { token }), 200);
      expectError(await s.get(`/usage-alerts/${p.id}`, { token }), 404);
    });

    it('validates limits, thresholds and recipients (400)', async () => {
      const { token } = await company();
      const eleven = Array.from({ length: 11 }, (_, i) => ({ percentage: (i + 1) * 9 }));
      for (const b of [
        {},
        body({ limit_usd: 0 }),
        body({ limit_usd: 0.001 }),
        body({ limit_usd: -5 }),
        body({ limit_usd: '200' }),
        body({ emails: [] }),
        body({ emails: ['not-an-email'] }),
        body({ emails: 'ops@example.com' }),
        body({ emails: ['a@example.com', 'A@example.com'] }),
        body({ triggers: [] }),
        body({ triggers: eleven }),
        body({ triggers: [{ percentage: 0 }] }),
        body({ triggers: [{ percentage: 101 }] }),
        body({ triggers: [{ percentage: 50.5 }] }),
        body({ triggers: [{ percentage: 50 }, { percentage: 50 }] }),
        body({ triggers: [{ percentage: 50, id: MISSING }] }),
        body({ project_id: 'nope' }),
        body({ company_id: MISSING }),
      ]) {
        expectError(await s.post('/usage-alerts', b, { token }), 400);
      }
      const ten = expectStatus(await s.post('/usage-alerts', body({ triggers: eleven.slice(0, 10), limit_usd: 0.01 }), { token }), 201);
      assert.equal(ten.triggers.length, 10);
      for (const b of [{ project_id: null }, { triggers: eleven }, { emails: [] }, { limit_usd: 0 }, { triggers: [{ percentage: 7 }, { percentage: 7 }] }]) {
        expectError(await s.patch(`/usage-alerts/${ten.id}`, b, { token }), 400);
      }
      expectError(await s.get('/usage-alerts?project_id=nope', { token }), 400);
      expectError(await s.get('/usage-alerts/nope', { token }), 400);
    });

    it('fires each threshold once per billing period; replacing triggers resets it', async () => {
      const { token, companyId } = await company();
      assert.equal(billingPeriod(new Date('2026-03-31T23:59:59Z')), '2026-03');
      const c = expectStatus(
        await s.post('/usage-alerts', body({ limit_usd: 100, triggers: [{ percentage: 50 }, { percentage: 80 }, { percentage: 100 }] }), { token }),
        201,
      );
      const db = s.app.database.db;
      const ctx = systemCall(s.app, db, companyId);
      const march = new Date('2026-03-10T10:00:00Z');
      assert.equal(await recordUsage(ctx, c.id, 10, march), null, 'below every threshold');
      const first = await recordUsage(ctx, c.id, 85, march);
      assert.equal(first?.percentage, 80, 'the highest reached threshold fires');
      assert.equal(await recordUsage(ctx, c.id, 90, new Date('2026-03-20T10:00:00Z')), null, 'not twice in a period');
      const got = expectStatus(await s.get(`/usage-alerts/${c.id}`, { token }), 200);
      assert.deepEqual(
        got.triggers.map((t: any) => t.last_fired_at),
        [march.toISOString(), march.toISOString(), null],
      );
      assert.equal((await recordUsage(ctx, c.id, 120, new Date('2026-03-21T10:00:00Z')))?.percentage, 100);
      // The next period re-arms every threshold.
      assert.equal((await recordUsage(ctx, c.id, 60, new Date('2026-04-01T00:00:00Z')))?.percentage, 50);
      const raw = await db
        .selectFrom('usage_alert_triggers')
        .select(['percentage', 'fired_period'])
        .where('alert_id', '=', c.id)
        .orderBy('percentage')
        .execute();
      assert.deepEqual(raw, [
        { percentage: 50, fired_period: '2026-04' },
        { percentage: 80, fired_period: '2026-03' },
        { percentage: 100, fired_period: '2026-03' },
      ]);
      // New triggers replace the old ones with a fresh fired state.
      const u = expectStatus(await s.patch(`/usage-alerts/${c.id}`, { triggers: [{ percentage: 50 }] }, { token }), 200);
      assert.equal(u.triggers[0].last_fired_at, null);
      assert.notEqual(u.triggers[0].id, got.triggers[0].id);
    });

    it('enforces permissions: Billing manages, Developer is refused, Viewer reads', async () => {
      const { token, companyId } = await company();
      const c = expectStatus(await s.post('/usage-alerts', body(), { token }), 201);

      const billing = await s.newKey({ role: 'Company Billing', companyId });
      const pid = await project(token);
      const b = expectStatus(await s.post('/usage-alerts', body({ project_id: pid }), { token: billing.token }), 201);
      expectStatus(await s.patch(`/usage-alerts/${b.id}`, { limit_usd: 1 }, { token: billing.token }), 200);
      expectStatus(await s.get('/usage-alerts', { token: billing.token }), 200);
      assert.equal((await s.delete(`/usage-alerts/${b.id}`, { token: billing.token })).status, 204);

      const dev = await s.newKey({ role: 'Company Developer', companyId });
      expectError(await s.get('/usage-alerts', { token: dev.token }), 403, /BILLING:READ/);
      expectError(await s.post('/usage-alerts', body({ project_id: pid }), { token: dev.token }), 403, /BILLING:CREATE/);

      const viewer = await s.newKey({ role: 'Company Viewer', companyId });
      expectStatus(await s.get(`/usage-alerts/${c.id}`, { token: viewer.token }), 200);
      expectError(await s.post('/usage-alerts', body({ project_id: pid }), { token: viewer.token }), 403, /BILLING:CREATE/);
      expectError(await s.patch(`/usage-alerts/${c.id}`, { limit_usd: 1 }, { token: viewer.token }), 403, /BILLING:UPDATE/);
      expectError(await s.delete(`/usage-alerts/${c.id}`, { token: viewer.token }), 403, /BILLING:DELETE/);
    });

    it('isolates companies (404)', async () => {
      const a = await company();
      const b = await company();
      const c = expectStatus(await s.post('/usage-alerts', body(), { token: a.token }), 201);
      expectError(await s.get(`/usage-alerts/${c.id}`, { token: b.token }), 404);
      expectError(await s.patch(`/usage-alerts/${c.id}`, { limit_usd: 1 }, { token: b.token }), 404);
      expectError(await s.delete(`/usage-alerts/${c.id}`, { token: b.token }), 404);
      assert.equal(expectStatus(await s.get('/usage-alerts', { token: b.token }), 200).total, 0);
      expectStatus(await s.get(`/usage-alerts/${c.id}`, { token: a.token }), 200);
    });
  });

  describe(`usage alerts rate tiers [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: { ...GENEROUS, service_creation: 2 } });

    it('counts creation in the service creation tier (429), updates elsewhere', async () => {
      const c = expectStatus(await s.post('/usage-alerts', body()), 201);
      const pid = expectStatus(await s.post('/projects', { display_name: 'P' }), 201).id;
      expectStatus(await s.post('/usage-alerts', body({ project_id: pid })), 201);
      const over = await s.post('/usage-alerts', body());
      expectError(over, 429);
      assert.ok(over.headers.get('retry-after'));
      assert.equal(over.headers.get('x-ratelimit-limit'), '2');
      expectStatus(await s.patch(`/usage-alerts/${c.id}`, { limit_usd: 3 }), 200);
      assert.equal((await s.delete(`/usage-alerts/${c.id}`)).status, 204);
    });
  });
}
