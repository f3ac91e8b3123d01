// 401: every way a request can fail to authenticate, and the key lifecycle operations
// (toggle, expiry, delete, rotate) that make a key stop or keep working.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { DB_KINDS, skipUnless, useServer, type Response } from '../helpers/server.js';
import { expectError, sleep, waitFor } from '../helpers/util.js';
import { assertCommonHeaders } from './support.js';

/** A 401 with the exact error body `{message, status}` and the headers every response carries. */
function assert401(r: Response, message?: RegExp): string {
  const msg = expectError(r, 401);
  assert.deepEqual(Object.keys(r.body).sort(), ['message', 'status'], `401 body has exactly message and status: ${r.text}`);
  if (message) assert.match(msg, message);
  assertCommonHeaders(r);
  return msg;
}

for (const kind of DB_KINDS) {
  describe(`authentication (401) [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind });

    it('rejects a request without an Authorization header', async () => {
      const r = await s.get('/projects', { token: null });
      assert401(r, /missing/i);
    });

    it('rejects malformed Authorization headers', async () => {
      const valid = s.token;
      for (const header of ['Token x', 'Bearer', 'Bearer ', `Basic ${valid}`, `bearer${valid}`, 'Bearer short', `Bearer ${valid} extra`]) {
        const r = await s.get('/projects', { token: null, headers: { authorization: header } });
        assert401(r, /malformed|missing/i);
      }
      const m = assert401(await s.get('/projects', { token: null, headers: { authorization: 'Token x' } }));
      assert.match(m, /malformed/i);
    });

    it('accepts the Bearer scheme name in any case', async () => {
      for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
        const r = await s.get('/api-keys/me', { token: null, headers: { authorization: `${scheme} ${s.token}` } });
        assert.equal(r.status, 200, `${scheme}: ${r.text}`);
      }
    });

    it('rejects an unknown key', async () => {
      const r = await s.get('/projects', { token: `svl_${randomBytes(32).toString('hex')}` });
      assert401(r, /invalid/i);
    });

    it('rejects a disabled key and accepts it again once re-enabled', async () => {
      const k = await s.newKey({ role: 'Company Admin' });
      assert.equal((await s.get('/projects', { token: k.token })).status, 200);

      const off = await s.post(`/api-keys/${k.id}/toggle`);
      assert.equal(off.status, 200);
      assert.equal(off.body.is_enabled, false);
      assert401(await s.get('/projects', { token: k.token }), /disabled/i);
      assert.equal((await s.get(`/api-keys/${k.id}`)).body.is_enabled, false);

      const on = await s.post(`/api-keys/${k.id}/toggle`);
      assert.equal(on.status, 200);
      assert.equal(on.body.is_enabled, true);
      assert.equal((await s.get('/projects', { token: k.token })).status, 200);
    });

    it('a key change rolled back, then a key change committed: the cached key is refused after the commit', async () => {
      // The key cache notices changes on SQLite by a generation that triggers bump; a request made
      // while a change is still uncommitted sees the bumped value, which the rollback takes back.
      // The next committed change bumps it to that same value again: it must still be noticed.
      const k = await s.newKey({ role: 'Company Admin' });
      assert.equal((await s.get('/projects', { token: k.token })).status, 200);
      const db = s.app.database.db;
      const during = await db
        .transaction()
        .execute(async (tx) => {
          await tx.updateTable('api_keys').set({ is_enabled: 0 }).where('id', '=', k.id).execute();
          const r = s.get('/projects', { token: k.token });
          await sleep(kind === 'sqlite' ? 100 : 0);
          throw Object.assign(new Error('roll back'), { pending: r });
        })
        .catch((e: { pending?: Promise<Response> }) => e.pending);
      assert.equal((await during!).status, 200, 'the change was rolled back');
      assert.equal((await s.get('/projects', { token: k.token })).status, 200);
      await db.updateTable('api_keys').set({ is_enabled: 0 }).where('id', '=', k.id).execute();
      // On PostgreSQL a change made outside the API reaches the cache with its NOTIFY, a moment
      // after the commit (nothing waits for it): polled, not slept for.
      const read = () => s.get('/projects', { token: k.token });
      const refusedOnce = async () => {
        const r = await read();
        return r.status === 401 && r;
      };
      const refused = kind === 'postgres' ? await waitFor('the NOTIFY of the change', refusedOnce) : await read();
      assert401(refused, /disabled/i);
    });

    it('rejects an expired key', async () => {
      const expiresAt = Date.now() + 1500;
      const k = await s.newKey({ role: 'Company Viewer', expired_at: new Date(expiresAt).toISOString() });
      const before = await s.get('/projects', { token: k.token });
      assert.equal(before.status, 200, 'the key works before its expiry');
      await sleep(expiresAt - Date.now() + 50);
      assert401(await s.get('/projects', { token: k.token }), /expired/i);
      const view = await s.get(`/api-keys/${k.id}`);
      assert.equal(view.status, 200, 'an expired key is still listed');
      assert.equal(Date.parse(view.body.expired_at), expiresAt);
    });

    it('rejects a deleted key', async () => {
      const k = await s.newKey({ role: 'Company Admin' });
      assert.equal((await s.get('/projects', { token: k.token })).status, 200);
      const d = await s.delete(`/api-keys/${k.id}`);
      assert.equal(d.status, 200);
      assert401(await s.get('/projects', { token: k.token }), /deleted/i);
      assert.equal((await s.get(`/api-keys/${k.id}`)).status, 404, 'a deleted key is gone from the API');
      const list = await s.get('/api-keys?limit=100');
      assert.ok(!list.body.data.some((x: { id: string }) => x.id === k.id), 'a deleted key is not listed');
    });

    it('rejects the old token right after a rotation without grace period', async () => {
      const k = await s.newKey({ role: 'Company Admin' });
      const rot = await s.post(`/api-keys/${k.id}/rotate`, { old_token_ttl_hours: 0 });
      assert.equal(rot.status, 200);
      assert.notEqual(rot.body.token, k.token);
      assert401(await s.get('/projects', { token: k.token }));
      assert.equal((await s.get('/projects', { token: rot.body.token })).status, 200, 'the new token works');
      const view = await s.get(`/api-keys/${k.id}`);
      assert.equal(view.body.old_token_expired_at, null);
    });

    it('keeps the old token valid during a rotation grace period', async () => {
      const k = await s.newKey({ role: 'Company Admin' });
      const t0 = Date.now();
      const rot = await s.post(`/api-keys/${k.id}/rotate`, { old_token_ttl_hours: 1 });
      assert.equal(rot.status, 200);
      assert.equal((await s.get('/projects', { token: k.token })).status, 200, 'the old token still works');
      assert.equal((await s.get('/projects', { token: rot.body.token })).status, 200, 'the new token works');
      const view = await s.get(`/api-keys/${k.id}`);
      assert.equal(view.status, 200);
      assert.equal(typeof view.body.old_token_expired_at, 'string');
      const until = Date.parse(view.body.old_token_expired_at);
      assert.ok(
        until >= t0 + 3600_000 - 5000 && until <= Date.now() + 3600_000 + 5000,
        `old_token_expired_at ${view.body.old_token_expired_at} is about an hour away`,
      );

      // Once the grace period is over (moved into the past here rather than waited for), the old token fails.
      // Written like a service writes a key: announced to the key cache, answered once that is back.
      await s.app.database.db.transaction().execute(async (tx) => {
        await s.app.keys.changing(tx);
        await tx
          .updateTable('api_keys')
          .set({ old_token_expired_at: new Date(Date.now() - 1000).toISOString() })
          .where('id', '=', k.id)
          .execute();
      });
      await s.app.keys.announced();
      assert401(await s.get('/projects', { token: k.token }), /rotated/i);
      assert.equal((await s.get(`/api-keys/${k.id}`)).body.old_token_expired_at, null, 'a past grace period is not shown');
      assert.equal((await s.get('/projects', { token: rot.body.token })).status, 200);
    });

    it('ends an earlier grace period when the key is rotated again without one', async () => {
      const k = await s.newKey({ role: 'Company Admin' });
      const rot = await s.post(`/api-keys/${k.id}/rotate`, { old_token_ttl_hours: 1 });
      assert.equal(rot.status, 200);
      assert.equal((await s.get('/projects', { token: k.token })).status, 200);
      const rot2 = await s.post(`/api-keys/${k.id}/rotate`, { old_token_ttl_hours: 0 });
      assert.equal(rot2.status, 200);
      assert401(await s.get('/projects', { token: k.token }));
      assert401(await s.get('/projects', { token: rot.body.token }));
      assert.equal((await s.get('/projects', { token: rot2.body.token })).status, 200);
    });
  });
}
