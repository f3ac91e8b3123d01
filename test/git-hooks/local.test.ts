// Deploy on push on the local runtime, end to end: a GitHub push event for a `file://` repository
// builds and releases the application for real at the pushed commit (SQLite: the webhook path is
// the same on PostgreSQL, covered by webhooks.test.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRealApp, LOCAL_ENV, makeRepo, serverJs } from '../apps-real/support.js';
import { skipUnless, useServer } from '../helpers/server.js';
import { untilStatus } from '../helpers/status.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { deliver, gitMissing, hookSecret, providerHeaders } from './support.js';

describe('git hooks: a push builds for real (local runtime)', { skip: (await skipUnless('sqlite')) || gitMissing() }, () => {
  const s = useServer({ db: 'sqlite', env: { ...LOCAL_ENV, SLIPWAY_GIT_POLL_SECONDS: '0' } });

  it('a pushed commit is built, released and recorded with its id and trigger', async () => {
    const repo = makeRepo('v1');
    const a = await createRealApp(s, repo.url, 'pushed');
    // The release prints the trigger it was given (SVL_DEPLOYMENT_TRIGGER) before it serves.
    const sha = repo.commit('v2', false, { 'server.js': `console.log('trigger=' + process.env.SVL_DEPLOYMENT_TRIGGER);\n${serverJs('v2')}` });
    const { secret, webhook_urls } = await hookSecret(s);
    const body = JSON.stringify({
      ref: 'refs/heads/main',
      after: sha,
      commits: [],
      head_commit: { id: sha, message: 'version v2' },
      repository: { clone_url: repo.url },
    });
    const r = await deliver(webhook_urls.github, providerHeaders('github', 'push', body, secret), body);
    assert.equal(r.body.result, 'deployed', JSON.stringify(r.body));
    const id = r.body.triggered[0].deployment_id;
    const d = await untilStatus(`deployment ${id}`, async () => expectStatus(await s.get(`/applications/${a.id}/deployments/${id}`), 200), {
      timeoutMs: 90_000,
      intervalMs: 100,
    });
    assert.equal(d.status, 'success');
    assert.equal(d.commit_sha, sha);
    assert.equal(d.trigger, 'push');
    await waitFor('the release to print its trigger', async () =>
      (expectStatus(await s.get(`/applications/${a.id}/runtime-logs?limit=500`), 200) as { message: string }[]).some((l) => l.message.includes('trigger=push')),
    );
  });
});
