// Deployment hook: get (404 while disabled), enable (201 {url}), regenerate (new url; the old one
// stops working), disable (204). A POST to the hook URL itself — public, no Authorization —
// triggers a deployment (201 with the deployment); an unknown token is 404.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll, MISSING } from '../helpers/util.js';
import { IMMEDIATE_ENV, appPath, createApp, deploymentsPath, setProgression, waitForAppStatus, waitForFinal } from './support.js';

const hookPath = (appId: string) => `${appPath(appId)}/deployment-hook`;

/** POSTs to a hook URL as a CI system would: no API key. */
async function callHook(url: string, body?: unknown) {
  const res = await fetch(url, {
    method: 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers, text };
}

for (const kind of DB_KINDS) {
  describe(`applications: deployment hook [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    it('get is 404 while the hook is disabled; enable answers 201 with a URL that get then returns', async () => {
      const a = await createApp(s);
      expectError(await s.get(hookPath(a.id)), 404);
      const on = expectStatus(await s.post(hookPath(a.id)), 201);
      assert.deepEqual(Object.keys(on), ['url']);
      assert.ok(on.url.startsWith(`${s.baseUrl}/`), `${on.url} is on this server`);
      assert.ok(!on.url.includes(a.id), 'the URL does not expose the application id');
      assert.deepEqual(expectStatus(await s.get(hookPath(a.id)), 200), on);
      // Enabling again keeps the same URL.
      assert.deepEqual(expectStatus(await s.post(hookPath(a.id)), 201), on);
    });

    it('POST to the hook URL without an API key triggers a deployment (201 with the deployment)', async () => {
      await setProgression(s, 'deployment', { mode: 'immediate' });
      const a = await createApp(s);
      const { url } = expectStatus(await s.post(hookPath(a.id)), 201);
      const r = await callHook(url);
      assert.equal(r.status, 201, r.text);
      const d = r.body;
      assert.equal(d.app_id, a.id);
      assert.ok(['waiting', 'inProgress'].includes(d.status), d.status);
      assert.equal(d.trigger, 'hook');
      assert.equal(d.type, 'automatic');
      assert.deepEqual(d.steps, ['checkout', 'build', 'rollout']);
      const listed = await listAll(s, deploymentsPath(a.id));
      assert.deepEqual(
        listed.map((x) => x.id),
        [d.id],
      );
      assert.equal((await waitForFinal(s, a.id, d.id)).status, 'success');
      await waitForAppStatus(s, a.id, 'deploymentSuccess');
      // A branch in the body is deployed.
      const b = await callHook(url, { branch: 'hotfix' });
      assert.equal(b.status, 201, b.text);
      assert.equal(b.body.branch, 'hotfix');
    });

    it('regenerate returns a new URL; the old one stops working (404) and the new one deploys', async () => {
      const a = await createApp(s, { kind: 'image' });
      const { url: old } = expectStatus(await s.post(hookPath(a.id)), 201);
      const { url: fresh } = expectStatus(await s.put(hookPath(a.id)), 200);
      assert.notEqual(fresh, old);
      assert.equal(expectStatus(await s.get(hookPath(a.id)), 200).url, fresh);
      const stale = await callHook(old);
      assert.equal(stale.status, 404, stale.text);
      assert.equal(stale.body.status, 404);
      assert.equal(expectStatus(await s.get(deploymentsPath(a.id)), 200).total, 0, 'the old URL deployed nothing');
      assert.equal((await callHook(fresh)).status, 201);
      assert.equal(expectStatus(await s.get(deploymentsPath(a.id)), 200).total, 1);
    });

    it('disable answers 204; afterwards get is 404 and the URL no longer deploys; regenerate or disable again are 404', async () => {
      const a = await createApp(s, { kind: 'image' });
      const { url } = expectStatus(await s.post(hookPath(a.id)), 201);
      const off = await s.delete(hookPath(a.id));
      assert.equal(off.status, 204);
      assert.equal(off.text, '');
      expectError(await s.get(hookPath(a.id)), 404);
      assert.equal((await callHook(url)).status, 404);
      expectError(await s.delete(hookPath(a.id)), 404);
      expectError(await s.put(hookPath(a.id)), 404);
      assert.equal(expectStatus(await s.get(deploymentsPath(a.id)), 200).total, 0);
      // It can be enabled again, with a new URL.
      const again = expectStatus(await s.post(hookPath(a.id)), 201);
      assert.notEqual(again.url, url);
    });

    it('an unknown or malformed hook token is 404', async () => {
      const a = await createApp(s);
      const { url } = expectStatus(await s.post(hookPath(a.id)), 201);
      const base = url.slice(0, url.lastIndexOf('/') + 1);
      for (const token of ['A'.repeat(43), 'x', 'not-a-real-token-but-long-enough-0123456789']) {
        const r = await callHook(base + token);
        assert.equal(r.status, 404, `${token}: ${r.text}`);
        assert.equal(r.body.status, 404);
      }
      assert.equal(expectStatus(await s.get(deploymentsPath(a.id)), 200).total, 0);
    });

    it("hook management follows the application: unknown application 404; another company's application 404", async () => {
      const a = await createApp(s);
      expectError(await s.get(hookPath(MISSING)), 404);
      expectError(await s.post(hookPath(MISSING)), 404);
      const other = await s.newCompany();
      expectError(await s.post(hookPath(a.id), undefined, { token: other.token }), 404);
      expectError(await s.get(hookPath(a.id), { token: other.token }), 404);
    });

    it('the hook of a suspended application does not deploy it (400), like a triggered deployment', async () => {
      const a = await createApp(s, { kind: 'image' });
      const { url } = expectStatus(await s.post(hookPath(a.id)), 201);
      expectStatus(await s.post(`${appPath(a.id)}/suspend`), 200);
      const r = await callHook(url);
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.message, /suspended/i);
      assert.equal(expectStatus(await s.get(deploymentsPath(a.id)), 200).total, 0);
      expectStatus(await s.post(`${appPath(a.id)}/activate`), 200);
      assert.equal((await callHook(url)).status, 201);
    });

    it('the hook of a suspended or maintained company is refused (403) and deploys nothing', async () => {
      const c = await s.newCompany();
      const a = await createApp(s, { kind: 'image', token: c.token });
      const { url } = expectStatus(await s.post(hookPath(a.id), undefined, { token: c.token }), 201);
      expectStatus(await s.admin('POST', `/companies/${c.companyId}/suspend`), 200);
      const suspended = await callHook(url);
      assert.equal(suspended.status, 403, suspended.text);
      assert.match(suspended.body.message, /suspended/i);
      expectStatus(await s.admin('POST', `/companies/${c.companyId}/maintenance`), 200);
      const maintained = await callHook(url);
      assert.equal(maintained.status, 403, maintained.text);
      assert.match(maintained.body.message, /maintained/i);
      expectStatus(await s.admin('DELETE', `/companies/${c.companyId}/maintenance`), 200);
      assert.equal(expectStatus(await s.get(deploymentsPath(a.id), { token: c.token }), 200).total, 0);
      assert.equal((await callHook(url)).status, 201, 'an active company deploys again');
    });
  });
}
