// Rate limits: x-ratelimit-* headers on every response; the read tier is one count per company
// across all reads; write tiers count per company and operation; requests without a valid key
// count per client IP. A 429 carries retry-after and the error body.
//
// The service_creation, service_mutation and deployment tiers have no operations yet (no service
// modules are registered), so they are not covered here.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DB_KINDS, REDIS_URL, openScratchDatabase, redisSkip, skipUnless, useServer, type Response } from '../helpers/server.js';
import { migrate, type Database } from '../../src/shared/db/index.js';
import { DatabaseStore } from '../../src/shared/ratelimit.js';
import { moduleMigrations } from '../../src/modules/index.js';
import { expectError, MISSING, waitFor } from '../helpers/util.js';
import { assertCommonHeaders, awaitFreshWindow } from './support.js';

const READ = 5;
const WRITE = 3;
const UNAUTH = 4;

function assert429(r: Response, limit: number) {
  const msg = expectError(r, 429);
  assert.match(msg, /rate limit/i);
  const h = assertCommonHeaders(r, limit);
  assert.equal(h.remaining, 0);
  const retry = r.headers.get('retry-after');
  assert.ok(retry !== null, 'a 429 has retry-after');
  assert.match(retry, /^\d+$/);
  assert.ok(Number(retry) >= 1 && Number(retry) <= 60, `retry-after ${retry} is within the minute window`);
  assert.equal(Number(retry), h.reset, 'retry-after matches x-ratelimit-reset');
}

// Each storage with its default counter store (SQLite: memory, PostgreSQL: the database), and
// the Redis store.
const SETUPS = [
  ...DB_KINDS.map((kind) => ({ kind, label: kind as string, env: {} as Record<string, string>, skip: skipUnless(kind) })),
  {
    kind: 'sqlite' as const,
    label: 'sqlite, counters in Redis',
    env: { REDIS_URL, SLIPWAY_RATE_LIMIT_STORE: 'redis', SLIPWAY_REDIS_PREFIX: `slipway-test-${randomUUID()}:` },
    skip: redisSkip(),
  },
];

for (const { kind, label, env, skip } of SETUPS) {
  describe(`rate limits [${label}]`, { skip: await skip }, () => {
    const s = useServer({ db: kind, env, rateLimits: { read: READ, general_write: WRITE, unauthenticated: UNAUTH } });

    it('success and error responses carry x-ratelimit-limit, -remaining and -reset', async () => {
      await awaitFreshWindow();
      const { token } = await s.newCompany();
      const r1 = await s.get('/projects', { token });
      assert.equal(r1.status, 200);
      assert.deepEqual({ ...assertCommonHeaders(r1, READ), reset: 0 }, { limit: READ, remaining: READ - 1, reset: 0 });

      const r2 = await s.get(`/projects/${randomUUID()}`, { token });
      expectError(r2, 404);
      assert.equal(assertCommonHeaders(r2, READ).remaining, READ - 2, 'errors are counted and report the state too');

      const w = await s.post('/projects', { display_name: 'headers' }, { token });
      assert.equal(w.status, 201);
      assert.equal(assertCommonHeaders(w, WRITE).remaining, WRITE - 1, 'writes report their own tier');

      const bad = await s.post('/projects', { nope: 1 }, { token });
      expectError(bad, 400);
      assert.equal(assertCommonHeaders(bad, WRITE).remaining, WRITE - 2);
    });

    it('concurrent requests each take their own place in the window', async () => {
      await awaitFreshWindow();
      const { token } = await s.newCompany();
      const rs = await Promise.all(Array.from({ length: READ * 3 }, () => s.get('/projects', { token })));
      const ok = rs.filter((r) => r.status === 200);
      assert.equal(ok.length, READ, `statuses: ${rs.map((r) => r.status).join(' ')}`);
      for (const r of rs.filter((r) => r.status !== 200)) assert429(r, READ);
      assert.deepEqual(
        ok.map((r) => assertCommonHeaders(r, READ).remaining).sort((x, y) => x - y),
        Array.from({ length: READ }, (_, i) => i),
      );
    });

    it('the read tier is one count shared by every read operation of a company', async () => {
      await awaitFreshWindow();
      const { token } = await s.newCompany();
      const paths = ['/projects', '/api-keys', '/api-keys/me', '/resources/clusters', '/users'];
      assert.equal(paths.length, READ);
      for (const [i, p] of paths.entries()) {
        const r = await s.get(p, { token });
        assert.equal(r.status, 200, `${p}: ${r.text}`);
        assert.equal(assertCommonHeaders(r, READ).remaining, READ - 1 - i, `remaining after ${p}`);
      }
      const over = await s.get('/resources/rbac/api-key-roles', { token });
      assert429(over, READ);
      assert429(await s.get('/projects', { token }), READ);
      // Writes are in another tier and still pass.
      assert.equal((await s.post('/projects', { display_name: 'still writable' }, { token })).status, 201);
    });

    it('the general_write tier counts each operation separately', async () => {
      await awaitFreshWindow();
      const { token } = await s.newCompany();
      const ids: string[] = [];
      for (let i = 0; i < WRITE; i++) {
        const r = await s.post('/projects', { display_name: `w${i}` }, { token });
        assert.equal(r.status, 201);
        ids.push(r.body.id);
      }
      const over = await s.post('/projects', { display_name: 'one too many' }, { token });
      assert429(over, WRITE);

      const patch = await s.patch(`/projects/${ids[0]}`, { display_name: 'renamed' }, { token });
      assert.equal(patch.status, 200, 'another operation of the same tier has its own count');
      assert.equal(assertCommonHeaders(patch, WRITE).remaining, WRITE - 1);

      const list = await s.get('/projects', { token });
      assert.equal(list.body.total, WRITE, 'the rejected create did not run');
    });

    it('each company has its own counts', async () => {
      await awaitFreshWindow();
      const a = await s.newCompany();
      const b = await s.newCompany();
      for (let i = 0; i < WRITE; i++) assert.equal((await s.post('/projects', { display_name: `a${i}` }, { token: a.token })).status, 201);
      assert429(await s.post('/projects', { display_name: 'a over' }, { token: a.token }), WRITE);
      for (let i = 0; i < READ; i++) assert.equal((await s.get('/projects', { token: a.token })).status, 200);
      assert429(await s.get('/projects', { token: a.token }), READ);

      const w = await s.post('/projects', { display_name: 'b first' }, { token: b.token });
      assert.equal(w.status, 201, 'company B is not limited by company A');
      assert.equal(assertCommonHeaders(w, WRITE).remaining, WRITE - 1);
      const r = await s.get('/projects', { token: b.token });
      assert.equal(r.status, 200);
      assert.equal(assertCommonHeaders(r, READ).remaining, READ - 1);
    });

    it('requests without a valid key are counted per client IP', async () => {
      await awaitFreshWindow();
      const { token } = await s.newCompany();
      // Earlier tests sent no unauthenticated requests; this test is the only one using the IP count.
      const attempts = [
        () => s.get('/projects', { token: null }),
        () => s.get('/projects', { token: `svl_${'0'.repeat(64)}` }),
        () => s.post('/projects', { display_name: 'x' }, { token: 'garbage' }),
        () => s.get('/api-keys', { token: null }),
      ];
      assert.equal(attempts.length, UNAUTH);
      for (const [i, attempt] of attempts.entries()) {
        const r = await attempt();
        expectError(r, 401);
        assert.equal(assertCommonHeaders(r, UNAUTH).remaining, UNAUTH - 1 - i);
      }
      const over = await s.get('/projects', { token: null });
      assert429(over, UNAUTH);
      assert429(await s.get('/api-keys/me', { token: `svl_${'1'.repeat(64)}` }), UNAUTH);

      const ok = await s.get('/projects', { token });
      assert.equal(ok.status, 200, 'a valid key is counted per company, not per IP');
      assert.equal(assertCommonHeaders(ok, READ).limit, READ);
    });
  });
}

// A shared store's counting: the requests of one bucket that arrive in the same turn of the event
// loop are counted by one atomic step (one upsert or script), each still taking its own place.
for (const kind of DB_KINDS) {
  describe(`database counter store [${kind}]`, { skip: await skipUnless(kind) }, () => {
    let database: Database;
    let cleanup: () => Promise<void>;
    before(async () => {
      ({ database, cleanup } = await openScratchDatabase(kind, 'slipway-rl-'));
      await migrate(database.db, moduleMigrations());
    });
    after(async () => {
      await database?.close();
      await cleanup?.();
    });

    it("counts the same turn's requests of a bucket in one step, each with its own count", async () => {
      class Counted extends DatabaseStore {
        steps: number[] = [];
        protected override add(bucket: string, windowSeconds: number, now: number, n: number) {
          this.steps.push(n);
          return super.add(bucket, windowSeconds, now, n);
        }
      }
      const store = new Counted(database.db);
      const now = Date.now();
      const counts = await Promise.all(Array.from({ length: 12 }, () => store.count('c:gathered:read', 60, now)));
      assert.deepEqual(
        counts.map((c) => c.count),
        Array.from({ length: 12 }, (_, i) => i + 1),
      );
      assert.deepEqual(store.steps, [12], 'one step for the twelve');
      // Requests that arrive while a step is in flight share the next one.
      const first = store.count('c:gathered:read', 60, now);
      await new Promise((r) => setImmediate(r));
      const more = [store.count('c:gathered:read', 60, now), store.count('c:gathered:read', 60, now)];
      assert.deepEqual(
        (await Promise.all([first, ...more])).map((c) => c.count),
        [13, 14, 15],
      );
      assert.deepEqual(store.steps, [12, 1, 2]);
    });

    it('counts the buckets gathered in one turn together (PostgreSQL: one statement per window length), each bucket exactly', async () => {
      let statements = 0;
      const counting = database.db.withPlugin({
        transformQuery: (a) => a.node,
        transformResult: async (a) => {
          statements++;
          return a.result;
        },
      });
      const store = new DatabaseStore(counting);
      const now = Date.now();
      const k = `t${now}`;
      for (let i = 0; i < 3; i++) await store.count(`${k}:a`, 60, now);
      // A window that began two minutes ago has ended: the next count opens a new one.
      await store.count(`${k}:old`, 60, now - 120_000);
      statements = 0;
      const turn = await Promise.all([
        store.count(`${k}:b`, 60, now),
        store.count(`${k}:a`, 60, now),
        store.count(`${k}:hour`, 3600, now),
        store.count(`${k}:old`, 60, now),
        store.count(`${k}:b`, 60, now),
        store.count(`${k}:c`, 60, now),
        store.count(`${k}:b`, 60, now),
      ]);
      assert.deepEqual(
        turn.map((c) => c.count),
        [1, 4, 1, 1, 2, 1, 3],
      );
      assert.deepEqual(
        turn.map((c) => c.reset),
        [60, 60, 3600, 60, 60, 60, 60],
      );
      assert.equal(statements, kind === 'postgres' ? 2 : 5, 'statements for the turn');
    });
  });
}

// A pure read (Operation.pure) runs while it is counted once its bucket has room; the count still
// decides every answer: its headers, and a 429 that wins over the request's other errors.
for (const kind of DB_KINDS) {
  describe(`pure reads counted while they run [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const LIMIT = 40;
    const s = useServer({ db: kind, rateLimits: { read: LIMIT } });

    it('a pure read runs while its count is in flight, a read that is not pure only after it', async () => {
      await awaitFreshWindow();
      const { token } = await s.newCompany();
      const project = (await s.post('/projects', { display_name: 'counted while read' }, { token })).body;
      assert.equal((await s.get(`/projects/${project.id}`, { token })).status, 200, 'the first read is counted first');
      const store = (s.app.limiter as unknown as { store: { count: (...a: unknown[]) => Promise<{ count: number; reset: number }> } }).store;
      const count = store.count.bind(store);
      const db = s.app.database.db;
      const selectFrom = db.selectFrom.bind(db);
      const read: string[] = [];
      let held: (() => void) | undefined;
      let answer: ((real: { count: number; reset: number }) => { count: number; reset: number }) | undefined;
      store.count = (...a) =>
        new Promise((resolve) => {
          held = () => void count(...a).then((real) => resolve(answer ? answer(real) : real));
        });
      (db as { selectFrom: unknown }).selectFrom = (table: string) => (read.push(table), selectFrom(table as never));
      const whileHeld = async (path: string) => {
        read.length = 0;
        held = undefined;
        const response = s.get(path, { token });
        await waitFor('the count to start', () => held !== undefined, 5000);
        await new Promise((r) => setTimeout(r, 100));
        const seen = [...read];
        held!();
        return { seen, response: await response };
      };
      try {
        const pure = await whileHeld(`/projects/${project.id}`);
        assert.ok(pure.seen.includes('projects'), `the project was read while counted: ${pure.seen.join(', ')}`);
        assert.equal(pure.response.status, 200);
        assert.equal(assertCommonHeaders(pure.response, LIMIT).remaining, LIMIT - 2);

        const other = await whileHeld('/api-keys');
        assert.deepEqual(other.seen, [], 'a read that is not declared pure waits for its count');
        assert.equal(other.response.status, 200);
        assert.equal(assertCommonHeaders(other.response, LIMIT).remaining, LIMIT - 3);

        // Over the limit, the count's 429 is the answer, not the 404 the read found meanwhile.
        answer = (real) => ({ count: LIMIT + 1, reset: real.reset });
        const over = await whileHeld(`/projects/${randomUUID()}`);
        assert.ok(over.seen.includes('projects'), 'the read ran while counted');
        assert429(over.response, LIMIT);
        const overList = await whileHeld('/projects');
        assert429(overList.response, LIMIT);
      } finally {
        store.count = count;
        (db as { selectFrom: unknown }).selectFrom = selectFrom;
      }
    });

    it('reads counted while they run are counted exactly: each its own place, the rest 429', async () => {
      await awaitFreshWindow();
      const { token } = await s.newCompany();
      assert.equal((await s.get('/projects', { token })).status, 200);
      const rs = await Promise.all(Array.from({ length: LIMIT * 2 }, (_, i) => s.get(i % 2 ? '/projects' : `/projects/${MISSING}`, { token })));
      const counted = rs.filter((r) => r.status !== 429);
      assert.equal(counted.length, LIMIT - 1, `statuses: ${rs.map((r) => r.status).join(' ')}`);
      for (const r of counted) assert.ok(r.status === 200 || r.status === 404, `status ${r.status}`);
      assert.deepEqual(
        counted.map((r) => assertCommonHeaders(r, LIMIT).remaining).sort((a, b) => a - b),
        Array.from({ length: LIMIT - 1 }, (_, i) => i),
        'every counted read has its own place',
      );
      for (const r of rs.filter((r) => r.status === 429)) assert429(r, LIMIT);
    });
  });
}
