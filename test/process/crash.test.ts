// Crash recovery of deployments: a server process is SIGKILLed while many deployments are waiting
// or in progress. On SQLite the restarted process (same data directory) releases the leases of
// the previous run; on PostgreSQL a surviving process takes over the dead one's jobs once their
// leases expire. Either way every deployment must reach a final status, at most one deployment
// per application may have been in progress at any time, and each application's status must
// follow its latest deployment.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import SQLite from 'better-sqlite3';
import { createPgDatabase, GENEROUS, skipUnless } from '../helpers/server.js';
import { ok, rateEnv, startChild, type ChildServer } from '../helpers/process.js';
import { DEPLOYMENT_FINAL } from '../helpers/status.js';
import { sleep } from '../helpers/util.js';

const APPS = 20;
const DEPLOYMENTS = 200;
const IN_FLIGHT = 20;
const APP_STATUS: Record<string, string> = { success: 'deploymentSuccess', failed: 'deploymentFailed', cancelled: 'deploymentCancelled' };

interface Deployment {
  id: string;
  app_id: string;
  status: string;
  started_at: string | null;
  finished_at: string | null;
  created_at: string;
}

function baseEnv(token: string, dir: string): Record<string, string> {
  return {
    DATA_DIR: dir,
    SLIPWAY_BOOTSTRAP_TOKEN: token,
    SLIPWAY_SECRET_KEY: 'crash-test-secret',
    // The test polls every deployment list many times.
    ...rateEnv(GENEROUS),
    SLIPWAY_SIM_PROGRESSION: 'deployment=duration:1500',
  };
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

/** Creates the applications, spreading the requests over the given servers. */
async function createApps(servers: ChildServer[], token: string): Promise<string[]> {
  const clusters = await ok(servers[0]!.baseUrl, token, 'GET', '/resources/clusters', 200);
  const cluster = clusters[0].id as string;
  return pool(
    Array.from({ length: APPS }, (_, i) => i),
    IN_FLIGHT,
    async (i) => {
      const app = await ok(servers[i % servers.length]!.baseUrl, token, 'POST', '/applications', 201, {
        display_name: `Crash app ${i}`,
        cluster_id: cluster,
        source: 'publicGit',
        repo_url: `https://github.com/slipway-tests/crash-${i}.git`,
      });
      return app.id as string;
    },
  );
}

/**
 * Triggers DEPLOYMENTS deployments over the apps, two at a time for the same app (sent at once,
 * through different servers when there are two), cycling through the apps.
 */
async function triggerDeployments(servers: ChildServer[], token: string, apps: string[]): Promise<Deployment[]> {
  return pool(
    Array.from({ length: DEPLOYMENTS }, (_, i) => i),
    IN_FLIGHT,
    async (i) =>
      ok(
        servers[i % servers.length]!.baseUrl,
        token,
        'POST',
        `/applications/${apps[Math.floor(i / 2) % apps.length]}/deployments`,
        200,
        {},
      ) as Promise<Deployment>,
  );
}

async function listDeployments(base: string, token: string, appId: string): Promise<Deployment[]> {
  const all: Deployment[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await ok(base, token, 'GET', `/applications/${appId}/deployments?limit=100&offset=${offset}`, 200);
    all.push(...page.data);
    if (all.length >= page.total || page.data.length === 0) return all;
  }
}

async function snapshot(base: string, token: string, apps: string[]): Promise<Map<string, Deployment[]>> {
  const lists = await pool(apps, 10, (id) => listDeployments(base, token, id));
  return new Map(apps.map((id, i) => [id, lists[i]!]));
}

const active = (snap: Map<string, Deployment[]>) => [...snap.values()].flat().filter((d) => !DEPLOYMENT_FINAL.has(d.status));

/** Polls the deployment lists until every deployment is final. */
async function waitAllFinal(base: string, token: string, apps: string[], timeoutMs = 120_000): Promise<Map<string, Deployment[]>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const snap = await snapshot(base, token, apps);
    const left = active(snap);
    if (!left.length) return snap;
    if (Date.now() > deadline) assert.fail(`${left.length} deployments still not final: ${JSON.stringify(left.slice(0, 5))}`);
    await sleep(250);
  }
}

/** The invariants of a drained system with no fault rules. */
async function assertConsistent(base: string, token: string, apps: string[], snap: Map<string, Deployment[]>, triggered: Deployment[]) {
  const all = [...snap.values()].flat();
  assert.equal(all.length, DEPLOYMENTS, 'every accepted deployment is listed');
  assert.deepEqual(new Set(all.map((d) => d.id)), new Set(triggered.map((d) => d.id)));
  const counts: Record<string, number> = {};
  for (const d of all) counts[d.status] = (counts[d.status] ?? 0) + 1;
  assert.equal((counts.waiting ?? 0) + (counts.inProgress ?? 0), 0, `no deployment stays active: ${JSON.stringify(counts)}`);
  for (const id of apps) {
    const list = [...snap.get(id)!].sort((x, y) => x.created_at.localeCompare(y.created_at) || x.id.localeCompare(y.id));
    // The newest deployment was never superseded and, without fault rules, succeeded.
    const newest = list[list.length - 1]!;
    assert.equal(newest.status, 'success', `latest deployment of app ${id}: ${JSON.stringify(newest)}`);
    // The application follows its latest deployment that was not skipped.
    const latest = list.filter((d) => d.status !== 'skipped').pop()!;
    const app = await ok(base, token, 'GET', `/applications/${id}`, 200);
    assert.equal(app.status, APP_STATUS[latest.status], `status of app ${id} (latest deployment ${latest.status})`);
    // At most one deployment of the app was in progress at any time: the run intervals of the
    // deployments that started never overlap.
    const runs = list.filter((d) => d.started_at !== null).sort((x, y) => x.started_at!.localeCompare(y.started_at!));
    for (const d of runs) assert.ok(d.finished_at, `deployment ${d.id} started and is final, so it has finished_at`);
    for (let i = 1; i < runs.length; i++) {
      assert.ok(
        runs[i]!.started_at! >= runs[i - 1]!.finished_at!,
        `app ${id}: deployment ${runs[i]!.id} started at ${runs[i]!.started_at} while ${runs[i - 1]!.id} ran until ${runs[i - 1]!.finished_at}`,
      );
    }
    // Skipped deployments never ran.
    for (const d of list.filter((x) => x.status === 'skipped')) assert.equal(d.started_at, null);
  }
  return counts;
}

describe('crash recovery on SQLite: SIGKILL and restart on the same data directory', { timeout: 180_000 }, () => {
  const token = `svl_${randomBytes(32).toString('hex')}`;
  let dir: string;
  let first: ChildServer | undefined;
  let second: ChildServer | undefined;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'slipway-crash-'));
  });
  after(async () => {
    await Promise.all([first?.stop('SIGKILL'), second?.stop('SIGKILL')]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('finishes every deployment after the restart', { timeout: 180_000 }, async (t) => {
    const env = baseEnv(token, dir);
    first = await startChild([], env);
    const apps = await createApps([first], token);
    const triggered = await triggerDeployments([first], token, apps);

    const before = active(await snapshot(first.baseUrl, token, apps));
    assert.ok(before.length >= 5, `many deployments are still active before the crash (${before.length})`);
    first.child.kill('SIGKILL');
    await first.stop();
    assert.equal(first.child.signalCode, 'SIGKILL');

    // What the dead process left behind, read straight from its database file.
    const file = new SQLite(join(dir, 'slipway.db'));
    try {
      const leased = file.prepare(`SELECT count(*) AS n FROM jobs WHERE status = 'running'`).get() as { n: number };
      const states = file.prepare(`SELECT status, count(*) AS n FROM deployments WHERE status IN ('waiting', 'inProgress') GROUP BY status`).all();
      t.diagnostic(`at the crash: ${before.length} active deployments seen through the API; ${JSON.stringify(states)} stored; ${leased.n} jobs mid-lease`);
    } finally {
      file.close();
    }

    second = await startChild([], env);
    const snap = await waitAllFinal(second.baseUrl, token, apps);
    const counts = await assertConsistent(second.baseUrl, token, apps, snap, triggered);
    t.diagnostic(`after the restart: ${JSON.stringify(counts)}`);
  });
});

describe('crash recovery on PostgreSQL: the surviving process takes over', { skip: await skipUnless('postgres'), timeout: 180_000 }, () => {
  const token = `svl_${randomBytes(32).toString('hex')}`;
  let db: Awaited<ReturnType<typeof createPgDatabase>> | undefined;
  let dir: string;
  let victim: ChildServer | undefined;
  let survivor: ChildServer | undefined;
  let client: pg.Client | undefined;

  before(async () => {
    db = await createPgDatabase();
    dir = mkdtempSync(join(tmpdir(), 'slipway-crash-pg-'));
  });
  after(async () => {
    await client?.end().catch(() => {});
    await Promise.all([victim?.stop('SIGKILL'), survivor?.stop('SIGKILL')]);
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('finishes every deployment, including those the killed process had claimed', { timeout: 180_000 }, async (t) => {
    const env = { ...baseEnv(token, dir), DATABASE_URL: db!.url, SLIPWAY_JOB_LEASE_MS: '3000' };
    [victim, survivor] = await Promise.all([startChild([], env), startChild([], env)]);
    const servers = [victim, survivor];
    const apps = await createApps(servers, token);
    const triggered = await triggerDeployments(servers, token, apps);
    const before = active(await snapshot(survivor.baseUrl, token, apps));
    assert.ok(before.length >= 5, `many deployments are still active before the crash (${before.length})`);

    // Freeze the deployments table so that job executions that change a deployment block after
    // their claim: both processes then hold leased jobs, and the victim dies holding some.
    client = new pg.Client({ connectionString: db!.url });
    await client.connect();
    await client.query('BEGIN');
    await client.query('LOCK TABLE deployments IN EXCLUSIVE MODE');
    const owner = `%:${victim.child.pid}:%`;
    const held = async () =>
      (await client!.query<{ id: string; subject_id: string }>(`SELECT id, subject_id FROM jobs WHERE status = 'running' AND lease_owner LIKE $1`, [owner]))
        .rows;
    const deadline = Date.now() + 20_000;
    let claimed = await held();
    // Wait until the victim holds some claimed jobs (ideally all its worker slots).
    for (let stable = 0; stable < 5 && Date.now() < deadline;) {
      await sleep(100);
      const now = await held();
      stable = now.length > 0 && now.length === claimed.length ? stable + 1 : 0;
      claimed = now;
    }
    assert.ok(claimed.length > 0, 'the victim holds claimed jobs when it is killed');
    victim.child.kill('SIGKILL');
    await victim.stop();
    const orphaned = await held();
    await client.query('ROLLBACK');
    t.diagnostic(`killed pid ${victim.child.pid} holding ${orphaned.length} leased jobs; ${before.length} deployments active`);
    assert.ok(orphaned.length > 0);

    const snap = await waitAllFinal(survivor.baseUrl, token, apps);
    const counts = await assertConsistent(survivor.baseUrl, token, apps, snap, triggered);
    t.diagnostic(`after the takeover: ${JSON.stringify(counts)}`);

    // The jobs the victim had claimed were completed by the survivor, not left behind.
    const jobs = await client.query<{ id: string; status: string; lease_owner: string | null }>(`SELECT id, status, lease_owner FROM jobs WHERE id = ANY($1)`, [
      orphaned.map((j) => j.id),
    ]);
    assert.equal(jobs.rows.length, orphaned.length);
    for (const j of jobs.rows) assert.equal(j.status, 'done', `job ${j.id} the victim had claimed`);
    const left = await client.query<{ n: string }>(`SELECT count(*) AS n FROM jobs WHERE kind = 'deployment.advance' AND status IN ('queued', 'running')`);
    assert.equal(Number(left.rows[0]!.n), 0, 'no deployment job is left queued or running');
    const orphanDeployments = new Set(orphaned.map((j) => j.subject_id));
    for (const d of [...snap.values()].flat()) if (orphanDeployments.has(d.id)) assert.ok(DEPLOYMENT_FINAL.has(d.status));
  });
});
