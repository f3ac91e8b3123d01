// Device authorization for CLIs: anonymous code creation and polling, operator approval or
// denial, the token handed out exactly once, expiry and the per-address limit of active codes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, UUID_RE } from '../helpers/util.js';
import { keyIdOf, TOKEN_RE } from './support.js';

const CODE_RE = /^[A-Z0-9]{4}-[A-Z0-9]{4}$/;

for (const kind of DB_KINDS) {
  describe(`device codes [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind });

    // Every request from the tests comes from one address, and at most five codes may be pending
    // per address: each test resolves (approves, denies or expires) the codes it leaves pending.
    const newCode = async () => {
      const r = await s.post('/auth/device-codes', undefined, { token: null });
      expectStatus(r, 201);
      return r.body as { code: string; expires_at: string };
    };
    const poll = async (code: string) => {
      const r = await s.get(`/auth/device-codes/${encodeURIComponent(code)}`, { token: null });
      expectStatus(r, 200);
      return r.body as { status: string; token?: string };
    };
    const approve = (code: string, body: Record<string, unknown>) => s.admin('POST', `/device-codes/${code}/approve`, body);
    const deny = (code: string) => s.admin('POST', `/device-codes/${code}/deny`);

    it('creates a pending code that expires about five minutes ahead, without a key', async () => {
      const before = Date.now();
      const r = await s.post('/auth/device-codes', undefined, { token: null });
      expectStatus(r, 201);
      assert.deepEqual(Object.keys(r.body).sort(), ['code', 'expires_at']);
      assert.match(r.body.code, CODE_RE);
      const expires = Date.parse(r.body.expires_at);
      assert.ok(!Number.isNaN(expires), 'expires_at is a timestamp');
      assert.ok(expires >= before + 4.5 * 60_000 && expires <= Date.now() + 5 * 60_000 + 1000, `expires_at ${r.body.expires_at} is about five minutes ahead`);
      assert.deepEqual(await poll(r.body.code), { status: 'pending' });
      assert.deepEqual(await poll(r.body.code.toLowerCase()), { status: 'pending' }, 'codes are case-insensitive');

      const other = await newCode();
      assert.notEqual(other.code, r.body.code);
      // A key is not needed, and one that is sent does not matter.
      assert.deepEqual((await s.get(`/auth/device-codes/${other.code}`, { token: `svl_${'f'.repeat(64)}` })).body, { status: 'pending' });

      for (const c of [r.body.code, other.code]) expectStatus(await deny(c), 200);
    });

    it('hands the token out exactly once after approval; the key works and comes from the CLI', async () => {
      const { code } = await newCode();
      const a = await approve(code, { company_id: s.companyId, role: 'Company Developer' });
      expectStatus(a, 200);
      assert.equal(a.body.status, 'approved');
      assert.equal(a.body.code, code);
      assert.match(a.body.api_key_id, UUID_RE);

      const first = await poll(code);
      assert.equal(first.status, 'approved');
      assert.match(first.token ?? '', TOKEN_RE);
      assert.deepEqual(await poll(code), { status: 'approved' }, 'the second poll gets no token');
      assert.deepEqual(await poll(code), { status: 'approved' });

      const token = first.token!;
      const me = await s.get('/api-keys/me', { token });
      expectStatus(me, 200);
      assert.equal(me.body.id, a.body.api_key_id);
      assert.equal(me.body.source, 'CLI');
      assert.equal(me.body.company_id, s.companyId);
      const key = await s.get(`/api-keys/${a.body.api_key_id}`);
      expectStatus(key, 200);
      assert.equal(key.body.source, 'CLI');
      assert.deepEqual(
        key.body.roles.map((r: { name: string }) => r.name),
        ['Company Developer'],
      );
      assert.ok(key.body.name.includes(code), 'the key name mentions the code');
      expectStatus(await s.post('/projects', { display_name: 'from the cli' }, { token }), 201);
      expectError(await s.get('/api-keys', { token }), 403, /API_KEY:READ/);

      // A decided code cannot be decided again.
      expectError(await approve(code, { company_id: s.companyId }), 400);
      expectError(await deny(code), 400);
      assert.deepEqual(await poll(code), { status: 'approved' });
    });

    it('approves into another company with the default role', async () => {
      const other = await s.newCompany();
      const { code } = await newCode();
      const a = await approve(code.toLowerCase(), { company_id: other.companyId, name: 'laptop' });
      expectStatus(a, 200);
      const { token } = await poll(code);
      assert.ok(token);
      const v = await s.get('/api-keys/validate', { token });
      expectStatus(v, 200);
      assert.equal(v.body.company_id, other.companyId);
      assert.equal(v.body.name, 'laptop');
      const me = await s.get('/api-keys/me', { token });
      assert.equal(me.body.capabilities.length, 48, 'Company Admin by default');
      expectError(await s.get(`/api-keys/${a.body.api_key_id}`), 404); // not visible from the first company
    });

    it('exactly one of several concurrent polls receives the token', async () => {
      const { code } = await newCode();
      expectStatus(await approve(code, { company_id: s.companyId, role: 'Company Viewer' }), 200);
      const polls = await Promise.all(Array.from({ length: 6 }, () => poll(code)));
      assert.ok(polls.every((p) => p.status === 'approved'));
      const tokens = polls.filter((p) => p.token !== undefined);
      assert.equal(tokens.length, 1, 'one token handed out');
      expectStatus(await s.get('/api-keys/validate', { token: tokens[0]!.token }), 200);
    });

    it('of concurrent operator decisions exactly one wins and one key is created', async () => {
      const keysBefore = (await s.get('/api-keys')).body.total as number;
      const { code } = await newCode();
      const rs = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 4 === 3 ? deny(code) : approve(code, { company_id: s.companyId, role: 'Company Viewer' }))),
      );
      const winners = rs.filter((r) => r.status === 200);
      assert.equal(winners.length, 1, `statuses: ${rs.map((r) => r.status).join(' ')}`);
      for (const r of rs) if (r.status !== 200) expectError(r, 400);
      const keysAfter = (await s.get('/api-keys')).body.total as number;
      const p = await poll(code);
      assert.equal(p.status, winners[0]!.body.status);
      if (p.status === 'approved') {
        assert.equal(keysAfter, keysBefore + 1, 'one key for one approval');
        assert.equal(await keyIdOf(s, p.token!), winners[0]!.body.api_key_id, 'the delivered token is the approved key');
      } else assert.equal(keysAfter, keysBefore, 'a denial creates no key');
    });

    it('reports a denied code as denied', async () => {
      const { code } = await newCode();
      const d = await deny(code);
      expectStatus(d, 200);
      assert.equal(d.body.status, 'denied');
      assert.deepEqual(await poll(code), { status: 'denied' });
      expectError(await approve(code, { company_id: s.companyId }), 400);
      assert.deepEqual(await poll(code), { status: 'denied' });
    });

    it('reports unknown and expired codes as expired; invalid approvals leave a code pending', async () => {
      assert.deepEqual(await poll('ZZZZ-ZZZZ'), { status: 'expired' });
      assert.deepEqual(await poll('not-a-code-at-all'), { status: 'expired' });
      expectError(await approve('ZZZZ-ZZZZ', { company_id: s.companyId }), 404);
      expectError(await deny('ZZZZ-ZZZZ'), 404);

      const { code } = await newCode();
      expectError(await approve(code, {}), 400, /company_id/);
      expectError(await approve(code, { company_id: '7c6b5a49-3827-4165-9c4b-3a2918070605' }), 404);
      expectError(await approve(code, { company_id: s.companyId, role: 'Company Overlord' }), 400, /role/i);
      assert.deepEqual(await poll(code), { status: 'pending' }, 'still pending after rejected approvals');

      // Five minutes later (moved in the database rather than waited for): expired, and no
      // longer decidable.
      await s.app.database.db
        .updateTable('device_codes')
        .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('code', '=', code)
        .execute();
      assert.deepEqual(await poll(code), { status: 'expired' });
      expectError(await approve(code, { company_id: s.companyId }), 400, /expired/);
      assert.deepEqual(await poll(code), { status: 'expired' });
    });

    it('allows five pending codes per client address; the sixth is 429', async () => {
      const codes = [];
      for (let i = 0; i < 5; i++) codes.push((await newCode()).code);
      const r = await s.post('/auth/device-codes', undefined, { token: null });
      expectError(r, 429, /device codes/);
      assert.match(r.headers.get('retry-after') ?? '', /^\d+$/, 'retry-after in seconds');
      for (const c of codes) assert.deepEqual(await poll(c), { status: 'pending' }, 'earlier codes are unaffected');

      // Once one is decided, a new one may be created.
      expectStatus(await deny(codes[0]!), 200);
      const again = await newCode();
      assert.match(again.code, CODE_RE);
      expectError(await s.post('/auth/device-codes', undefined, { token: null }), 429);
      for (const c of [...codes.slice(1), again.code]) expectStatus(await deny(c), 200);
      expectStatus(await deny((await newCode()).code), 200);
    });

    it('keeps the limit of five under concurrent requests', async () => {
      const rs = await Promise.all(Array.from({ length: 10 }, () => s.post('/auth/device-codes', undefined, { token: null })));
      const created = rs.filter((r) => r.status === 201);
      assert.equal(created.length, 5, `statuses: ${rs.map((r) => r.status).join(' ')}`);
      for (const r of rs) if (r.status !== 201) expectError(r, 429);
      for (const r of created) expectStatus(await deny(r.body.code), 200);
    });
  });
}
