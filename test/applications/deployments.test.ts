// Deployments: trigger, list, get, cancel, rollback, logs and the state machine
// waiting -> inProgress -> success | failed | cancelled (skipped when superseded while waiting),
// observed by polling under the simulation's progression modes (reads:N for deterministic steps,
// immediate, duration) and fault rules. The application's status follows its latest deployment.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll, MISSING, plannedIndexes, UUID_RE, waitFor } from '../helpers/util.js';
import { appAndActive } from '../../src/modules/applications/storage.js';
import { activeOf, supersede, withStatus } from '../../src/modules/applications/deployments.js';
import { sql } from 'kysely';
import { untilStatus } from '../helpers/status.js';
import {
  IMMEDIATE_ENV,
  addFault,
  appPath,
  createApp,
  deploy,
  deploymentLogs,
  deploymentPath,
  deploymentsPath,
  readApp,
  readDeployment,
  setProgression,
  trigger,
  waitForAppStatus,
  waitForFinal,
} from './support.js';

const DEPLOYMENT_FIELDS = [
  'app_id',
  'author_img',
  'author_login',
  'branch',
  'commit_message',
  'commit_sha',
  'created_at',
  'docker_image_url',
  'finished_at',
  'git_type',
  'id',
  'repo_url',
  'started_at',
  'status',
  'steps',
  'trigger',
  'type',
  'updated_at',
].sort();

for (const kind of DB_KINDS) {
  describe(`applications: deployments [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    const reads = (n: number) => setProgression(s, 'deployment', { mode: 'reads', reads: n });
    const immediate = () => setProgression(s, 'deployment', { mode: 'immediate' });

    it('a new deployment is returned inProgress when none runs; git builds (checkout, build, rollout), images do not', async () => {
      await reads(2);
      const git = await createApp(s);
      const d = await trigger(s, git.id);
      assert.deepEqual(Object.keys(d).sort(), DEPLOYMENT_FIELDS);
      assert.match(d.id, UUID_RE);
      assert.equal(d.app_id, git.id);
      assert.equal(d.status, 'inProgress');
      assert.deepEqual(d.steps, ['checkout', 'build', 'rollout']);
      assert.equal(d.type, 'manual');
      assert.equal(d.trigger, 'manual');
      assert.equal(d.branch, 'main');
      assert.equal(d.repo_url, git.repo_url);
      assert.match(d.commit_sha, /^[0-9a-f]{40}$/);
      // The simulated runtime's commit is a stand-in: it has no message to claim.
      assert.equal(d.commit_message, null);
      assert.ok(d.started_at, 'an inProgress deployment has started');
      assert.equal(d.finished_at, null);

      const img = await createApp(s, { kind: 'image' });
      const di = await trigger(s, img.id, { docker_image: 'nginx:1.28' });
      assert.equal(di.status, 'inProgress');
      assert.deepEqual(di.steps, ['checkout', 'rollout']);
      assert.equal(di.docker_image_url, 'nginx:1.28');
      assert.equal(di.commit_sha, null);

      const withBranch = await createApp(s);
      const db = await trigger(s, withBranch.id, { branch: 'feature/x' });
      assert.equal(db.branch, 'feature/x');
    });

    it('reads:2 — a git deployment completes one phase on every second read: inProgress x5, then success', async () => {
      await reads(2);
      const a = await createApp(s);
      const d = await trigger(s, a.id);
      assert.equal(d.status, 'inProgress');
      const seen: string[] = [];
      for (let i = 0; i < 6; i++) seen.push((await readDeployment(s, a.id, d.id)).status);
      assert.deepEqual(seen, ['inProgress', 'inProgress', 'inProgress', 'inProgress', 'inProgress', 'success']);
      const done = await readDeployment(s, a.id, d.id);
      assert.equal(done.status, 'success', 'a final deployment stays final');
      assert.ok(done.finished_at && done.finished_at >= done.started_at);
      // The log shows the phases in order, each tagged with its phase.
      const phases = (await deploymentLogs(s, a.id, d.id)).map((l) => l.attributes.phase).filter(Boolean);
      const order = phases.filter((p, i) => p !== phases[i - 1]);
      assert.deepEqual(order, ['checkout', 'build', 'rollout']);
    });

    it('reads:3 — an image deployment needs three reads per phase: inProgress x5, then success', async () => {
      await reads(3);
      const a = await createApp(s, { kind: 'image' });
      const d = await trigger(s, a.id);
      const seen: string[] = [];
      for (let i = 0; i < 6; i++) seen.push((await readDeployment(s, a.id, d.id)).status);
      assert.deepEqual(seen, ['inProgress', 'inProgress', 'inProgress', 'inProgress', 'inProgress', 'success']);
    });

    it('reads of the application count toward the running phase, and its status follows the deployment', async () => {
      await reads(2);
      const a = await createApp(s, { kind: 'image' });
      assert.equal(a.status, null);
      const d = await trigger(s, a.id);
      // checkout: one read of the deployment, one of the application
      assert.equal((await readDeployment(s, a.id, d.id)).status, 'inProgress');
      assert.equal((await readApp(s, a.id)).status, 'deploymentInProgress');
      // rollout: one read of the application, then the read of the application that completes it
      assert.equal((await readApp(s, a.id)).status, 'deploymentInProgress');
      assert.equal((await readApp(s, a.id)).status, 'deploymentSuccess');
      assert.equal((await readDeployment(s, a.id, d.id)).status, 'success');
    });

    it('reads:1 — a deployment triggered while another runs is waiting (reads do not move it) and starts when the first finishes', async () => {
      await reads(1);
      const a = await createApp(s, { kind: 'image' });
      const d1 = await trigger(s, a.id);
      const d2 = await trigger(s, a.id);
      assert.equal(d1.status, 'inProgress');
      assert.equal(d2.status, 'waiting');
      assert.equal(d2.started_at, null);
      for (let i = 0; i < 3; i++) assert.equal((await readDeployment(s, a.id, d2.id)).status, 'waiting');
      assert.equal((await readDeployment(s, a.id, d1.id)).status, 'inProgress', 'reads of the waiting one did not count for the running one');
      assert.equal((await readDeployment(s, a.id, d1.id)).status, 'success');
      // The waiting deployment starts on its own once nothing runs.
      const started = await waitFor('the waiting deployment to start', async () => {
        const x = await readDeployment(s, a.id, d2.id);
        return x.status !== 'waiting' ? x : undefined;
      });
      assert.equal(started.status, 'inProgress');
      assert.ok(started.started_at);
      assert.equal((await waitForFinal(s, a.id, d2.id)).status, 'success');
      assert.equal((await readApp(s, a.id)).status, 'deploymentSuccess');
    });

    it("the lookups of an application's active deployments are planned on the index of the active ones, not on every deployment it had", async () => {
      await reads(100);
      const a = await createApp(s, { kind: 'image' });
      for (let i = 0; i < 20; i++) await trigger(s, a.id);
      const db = s.app.database.db;
      if (kind === 'postgres') await sql`ANALYZE deployments`.execute(db);
      // The statements themselves (deployments.ts, storage.ts), with ACTIVE_STATUSES written into
      // them, so that both planners can prove the partial index's predicate.
      const statements = {
        active: activeOf(db, { appId: a.id }),
        waiting: withStatus(db, { appId: a.id, status: 'waiting' }),
        supersede: supersede(db, { appId: a.id, now: new Date().toISOString() }),
        'application with its active deployments': appAndActive(db, { id: a.id, companyId: a.company_id }),
      };
      for (const [name, q] of Object.entries(statements)) {
        const used = await plannedIndexes(s, q, { indexesOnly: true });
        assert.ok(used.includes('deployments_active'), `${name} (${q.sql}) planned on ${used.join(', ')}`);
      }
    });

    it('skipped: three deployments triggered while the first runs — the second is skipped when the third is created', async () => {
      await reads(2);
      const a = await createApp(s, { kind: 'image' });
      const d1 = await trigger(s, a.id);
      const d2 = await trigger(s, a.id);
      assert.equal(d1.status, 'inProgress');
      assert.equal(d2.status, 'waiting');
      assert.equal((await readDeployment(s, a.id, d2.id)).status, 'waiting');
      const d3 = await trigger(s, a.id);
      assert.equal(d3.status, 'waiting');
      const skipped = await readDeployment(s, a.id, d2.id);
      assert.equal(skipped.status, 'skipped');
      assert.ok(skipped.finished_at, 'a skipped deployment is finished');
      assert.equal((await readDeployment(s, a.id, d1.id)).status, 'inProgress', 'the running deployment is not affected');
      // The skipped deployment's queued job became the new one's: one row moved, none added.
      const jobs = await s.app.database.db
        .selectFrom('jobs')
        .select(['subject_id', 'status'])
        .where('subject_id', 'in', [d2.id, d3.id])
        .where('kind', '=', 'deployment.advance')
        .execute();
      assert.deepEqual(jobs, [{ subject_id: d3.id, status: 'queued' }]);
      // Finish d1 (rollout needs two more reads after the checkout's two).
      const final1 = await waitForFinal(s, a.id, d1.id);
      assert.equal(final1.status, 'success');
      // d3 starts and finishes under polling; d2 stays skipped.
      await waitFor('the third deployment to leave waiting', async () => (await readDeployment(s, a.id, d3.id)).status !== 'waiting');
      const final3 = await waitForFinal(s, a.id, d3.id);
      assert.equal(final3.status, 'success');
      assert.equal((await readDeployment(s, a.id, d2.id)).status, 'skipped');
      const list = await listAll(s, deploymentsPath(a.id));
      assert.deepEqual(Object.fromEntries(list.map((x) => [x.id, x.status])), { [d1.id]: 'success', [d2.id]: 'skipped', [d3.id]: 'success' });
      assert.equal((await readApp(s, a.id)).status, 'deploymentSuccess');
    });

    it('concurrent triggers of one application: each is newer than those it supersedes, so the newest is never a skipped one', async () => {
      await reads(2);
      const a = await createApp(s, { kind: 'image' });
      // Faster than a millisecond each, some of them land in the same millisecond.
      const made = await Promise.all(Array.from({ length: 30 }, () => trigger(s, a.id)));
      const list = await listAll(s, deploymentsPath(a.id));
      assert.equal(list.length, made.length);
      const byCreation = [...list].sort((x, y) => x.created_at.localeCompare(y.created_at) || x.id.localeCompare(y.id));
      assert.equal(new Set(list.map((d) => d.created_at)).size, list.length, 'no two share a creation time');
      // In creation order: the first runs, every later one supersedes the one waiting before it.
      assert.deepEqual(
        byCreation.map((d) => d.status),
        ['inProgress', ...Array.from({ length: made.length - 2 }, () => 'skipped'), 'waiting'],
      );
      for (const d of byCreation.filter((x) => x.status === 'skipped')) assert.ok(d.finished_at! > d.created_at, 'skipped after it was created');
    });

    it('cancel an in-progress deployment: 200, status cancelled with finished_at, logged, application deploymentCancelled', async () => {
      await reads(5);
      const a = await createApp(s);
      const d = await trigger(s, a.id);
      const r = expectStatus(await s.post(`${deploymentPath(a.id, d.id)}/cancel`), 200);
      assert.equal(typeof r.message, 'string');
      const c = await readDeployment(s, a.id, d.id);
      assert.equal(c.status, 'cancelled');
      assert.ok(c.finished_at);
      assert.equal((await readApp(s, a.id)).status, 'deploymentCancelled');
      const messages = (await deploymentLogs(s, a.id, d.id)).map((l) => l.message);
      assert.ok(
        messages.some((m) => /cancel/i.test(m)),
        messages.join('\n'),
      );
      // Reads of a cancelled deployment change nothing.
      for (let i = 0; i < 6; i++) assert.equal((await readDeployment(s, a.id, d.id)).status, 'cancelled');
    });

    it('cancel a waiting deployment: it is cancelled and the running one continues', async () => {
      await reads(2);
      const a = await createApp(s, { kind: 'image' });
      const d1 = await trigger(s, a.id);
      const d2 = await trigger(s, a.id);
      assert.equal(d2.status, 'waiting');
      expectStatus(await s.post(`${deploymentPath(a.id, d2.id)}/cancel`), 200);
      assert.equal((await readDeployment(s, a.id, d2.id)).status, 'cancelled');
      assert.equal((await readDeployment(s, a.id, d1.id)).status, 'inProgress');
      assert.equal((await waitForFinal(s, a.id, d1.id)).status, 'success');
      assert.equal((await readApp(s, a.id)).status, 'deploymentCancelled', 'the status follows the latest deployment (the cancelled one)');
    });

    it('cancelling the running deployment lets the waiting one start', async () => {
      await reads(2);
      const a = await createApp(s, { kind: 'image' });
      const d1 = await trigger(s, a.id);
      const d2 = await trigger(s, a.id);
      expectStatus(await s.post(`${deploymentPath(a.id, d1.id)}/cancel`), 200);
      assert.equal((await readDeployment(s, a.id, d1.id)).status, 'cancelled');
      await waitFor('the waiting deployment to start', async () => (await readDeployment(s, a.id, d2.id)).status === 'inProgress');
      assert.equal((await waitForFinal(s, a.id, d2.id)).status, 'success');
      assert.equal((await readApp(s, a.id)).status, 'deploymentSuccess');
    });

    it('cancel of a final deployment (success, cancelled, skipped) is 400; an unknown deployment is 404', async () => {
      await immediate();
      const a = await createApp(s, { kind: 'image' });
      const ok = await deploy(s, a.id);
      expectError(await s.post(`${deploymentPath(a.id, ok.id)}/cancel`), 400, /success/);
      await reads(2);
      const d1 = await trigger(s, a.id);
      const d2 = await trigger(s, a.id);
      await trigger(s, a.id); // skips d2
      expectError(await s.post(`${deploymentPath(a.id, d2.id)}/cancel`), 400, /skipped/);
      expectStatus(await s.post(`${deploymentPath(a.id, d1.id)}/cancel`), 200);
      expectError(await s.post(`${deploymentPath(a.id, d1.id)}/cancel`), 400, /cancelled/);
      expectError(await s.post(`${deploymentPath(a.id, MISSING)}/cancel`), 404);
      assert.equal((await readDeployment(s, a.id, ok.id)).status, 'success', 'the refused cancel changed nothing');
    });

    it('rollback redeploys the previous successful build: steps [rollout], same commit, log says the build was reused', async () => {
      await immediate();
      const a = await createApp(s);
      const first = await deploy(s, a.id);
      const second = await deploy(s, a.id);
      assert.notEqual(first.commit_sha, second.commit_sha);
      const rb = expectStatus(await s.post(`${deploymentsPath(a.id)}/rollback`), 200);
      assert.deepEqual(Object.keys(rb).sort(), DEPLOYMENT_FIELDS);
      assert.ok(['waiting', 'inProgress'].includes(rb.status), rb.status);
      assert.equal(rb.trigger, 'rollback');
      assert.deepEqual(rb.steps, ['rollout'], 'the build step is skipped');
      assert.equal(rb.commit_sha, first.commit_sha, 'the build of the release before the current one');
      assert.equal(rb.branch, first.branch);
      const done = await waitForFinal(s, a.id, rb.id);
      assert.equal(done.status, 'success');
      await waitForAppStatus(s, a.id, 'deploymentSuccess');
      const logs = await deploymentLogs(s, a.id, rb.id);
      const messages = logs.map((l) => l.message);
      assert.ok(
        messages.some((m) => /reus/i.test(m) && m.includes(first.id)),
        `a line says the build of ${first.id} was reused:\n${messages.join('\n')}`,
      );
      assert.ok(!messages.some((m) => /^Building with/.test(m) || /^Cloning/.test(m)), 'nothing was checked out or built');
      assert.ok(!logs.some((l) => l.attributes.phase === 'build' || l.attributes.phase === 'checkout'));
    });

    it('rollback after a failed deployment reuses the last successful build; without any success it is 400', async () => {
      await immediate();
      const fresh = await createApp(s);
      expectError(await s.post(`${deploymentsPath(fresh.id)}/rollback`), 400);
      assert.equal(expectStatus(await s.get(deploymentsPath(fresh.id)), 200).total, 0);

      const a = await createApp(s);
      const good = await deploy(s, a.id);
      await addFault(s, { operation: 'deployment', target_id: a.id, phase: 'build', remaining: 1 });
      const bad = await trigger(s, a.id);
      assert.equal((await waitForFinal(s, a.id, bad.id)).status, 'failed');
      await waitForAppStatus(s, a.id, 'deploymentFailed');
      const rb = expectStatus(await s.post(`${deploymentsPath(a.id)}/rollback`), 200);
      assert.equal(rb.commit_sha, good.commit_sha);
      assert.deepEqual(rb.steps, ['rollout']);
      assert.equal((await waitForFinal(s, a.id, rb.id)).status, 'success');
      await waitForAppStatus(s, a.id, 'deploymentSuccess');
    });

    it('restart (is_restart) reruns the current release without building; without a release it is 400', async () => {
      await immediate();
      const a = await createApp(s);
      expectError(await s.post(deploymentsPath(a.id), { is_restart: true }), 400);
      const release = await deploy(s, a.id);
      const r = await trigger(s, a.id, { is_restart: true });
      assert.equal(r.trigger, 'restart');
      assert.deepEqual(r.steps, ['rollout']);
      assert.equal(r.commit_sha, release.commit_sha);
      assert.equal((await waitForFinal(s, a.id, r.id)).status, 'success');
    });

    it('a fault rule makes the next deployment of that application fail in the build step; the reason is in the log', async () => {
      await immediate();
      const a = await createApp(s);
      const other = await createApp(s);
      const rule = await addFault(s, { operation: 'deployment', target_id: a.id, phase: 'build', remaining: 1, message: 'npm ERR! Missing script: "build"' });
      // Another application is not affected by the rule.
      await deploy(s, other.id);
      const d = await trigger(s, a.id);
      const failed = await waitForFinal(s, a.id, d.id);
      assert.equal(failed.status, 'failed');
      assert.ok(failed.finished_at);
      await waitForAppStatus(s, a.id, 'deploymentFailed');
      const logs = await deploymentLogs(s, a.id, d.id);
      const reason = logs.find((l) => l.message === 'npm ERR! Missing script: "build"');
      assert.ok(reason, `the reason is logged:\n${logs.map((l) => l.message).join('\n')}`);
      assert.equal(reason.severity, 'error');
      assert.equal(reason.attributes.phase, 'build');
      assert.ok(!logs.some((l) => l.attributes.phase === 'rollout'), 'the rollout never ran');
      assert.ok(logs.some((l) => /failed/i.test(l.message)));
      // The rule was used up: the next deployment succeeds.
      const faults = expectStatus(await s.admin('GET', '/simulation/faults'), 200);
      assert.ok(!faults.data.some((f: { id: string }) => f.id === rule.id), 'a rule with remaining 1 is gone after firing');
      await deploy(s, a.id);
    });

    it('immediate progression: a deployment finishes without being read', async () => {
      await immediate();
      const a = await createApp(s);
      const d = await trigger(s, a.id);
      // Poll the list (list reads do not advance deployments) until it is final.
      const done = await waitFor('the deployment to succeed in the list', async () => {
        const l = await listAll(s, deploymentsPath(a.id));
        return l.find((x) => x.id === d.id && x.status === 'success');
      });
      assert.ok(done.finished_at);
    });

    it('duration progression: a deployment finishes by itself once its duration has passed', async () => {
      await setProgression(s, 'deployment', { mode: 'duration', ms: 600 });
      const a = await createApp(s, { kind: 'image' });
      const d = await trigger(s, a.id);
      assert.equal(d.status, 'inProgress');
      const done = await waitFor('the deployment to succeed in the list', async () => {
        const l = await listAll(s, deploymentsPath(a.id));
        return l.find((x) => x.id === d.id && x.status === 'success');
      });
      assert.ok(done.finished_at);
      await waitForAppStatus(s, a.id, 'deploymentSuccess');
    });

    it("list returns the application's deployments in the pagination envelope; get of another app's deployment is 404", async () => {
      await immediate();
      const a = await createApp(s, { kind: 'image' });
      const b = await createApp(s, { kind: 'image' });
      const d1 = await deploy(s, a.id);
      const d2 = await deploy(s, a.id);
      const db = await deploy(s, b.id);
      const page = expectStatus(await s.get(`${deploymentsPath(a.id)}?limit=1`), 200);
      assert.equal(page.total, 2);
      assert.equal(page.data.length, 1);
      assert.deepEqual((await listAll(s, deploymentsPath(a.id))).map((x) => x.id).sort(), [d1.id, d2.id].sort());
      expectError(await s.get(deploymentPath(a.id, db.id)), 404);
      expectError(await s.get(deploymentPath(a.id, MISSING)), 404);
      expectError(await s.get(deploymentsPath(MISSING)), 404);
    });

    it('deployment logs are contract log entries of that deployment only, filterable; unknown deployment is 404', async () => {
      await immediate();
      const a = await createApp(s);
      const d1 = await deploy(s, a.id);
      const d2 = await deploy(s, a.id);
      const logs = await deploymentLogs(s, a.id, d1.id);
      assert.ok(logs.length > 3);
      for (const l of logs) {
        assert.equal(l.tags.deployment_id, d1.id);
        assert.equal(l.tags.kind, 'build');
        assert.equal((l as any).service, a.name);
      }
      const messages = logs.map((l) => l.message);
      assert.match(messages[0]!, /Deployment started/);
      assert.equal(messages.at(-1), 'Deployment success');
      assert.ok(messages.some((m) => m.startsWith('Cloning https://github.com/example/shop')));
      assert.ok(messages.some((m) => /^Building with nixpacks/.test(m)));
      assert.ok(messages.some((m) => /^Rolling out 1 process/.test(m)));
      const other = await deploymentLogs(s, a.id, d2.id);
      assert.ok(!other.some((l) => logs.some((x) => x.id === l.id)), 'each deployment has its own lines');
      const filtered = await deploymentLogs(s, a.id, d1.id, 'filters=rolling');
      assert.ok(filtered.length >= 1 && filtered.every((l) => /rolling/i.test(l.message)));
      const limited = await deploymentLogs(s, a.id, d1.id, 'limit=2');
      assert.equal(limited.length, 2);
      expectError(await s.get(`${deploymentPath(a.id, MISSING)}/logs`), 404);
    });

    it('trigger refuses a docker_image for a git application (400) and answers 404 for an unknown application', async () => {
      await immediate();
      const a = await createApp(s);
      expectError(await s.post(deploymentsPath(a.id), { docker_image: 'nginx:1' }), 400, /docker_image/);
      expectError(await s.post(deploymentsPath(MISSING), {}), 404);
      expectError(await s.post(`${deploymentsPath(MISSING)}/rollback`), 404);
      assert.equal(expectStatus(await s.get(appPath(a.id)), 200).status, null, 'no deployment was created');
    });
  });
}

describe('applications: many deployments at once, more job slots than pooled connections [postgres]', { skip: await skipUnless('postgres') }, () => {
  // Each deployment step is a job transaction; one that asked the pool for a second connection
  // (the simulation's settings) could leave every pooled connection held by a transaction waiting
  // for one more.
  const s = useServer({ db: 'postgres', rateLimits: GENEROUS, env: { ...IMMEDIATE_ENV, SLIPWAY_JOB_CONCURRENCY: '16' } });

  it('every deployment finishes', async () => {
    const apps = await Promise.all(Array.from({ length: 24 }, () => createApp(s)));
    const started = await Promise.all(apps.map((a) => trigger(s, a.id)));
    // A deadlock never ends; a loaded machine only slows 24 deployments down: a long wait, polled
    // gently, tells the two apart without adding to the load.
    const final = await Promise.all(
      started.map((d, i) => untilStatus(`deployment ${d.id} to finish`, () => readDeployment(s, apps[i]!.id, d.id), { timeoutMs: 120_000, intervalMs: 500 })),
    );
    assert.deepEqual(
      final.map((d) => d.status),
      final.map(() => 'success'),
    );
  });
});
