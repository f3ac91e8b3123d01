// The durable job engine on its own: runs due jobs, reschedules, retries with backoff until the
// last attempt, cancels, waits for future jobs, and takes over a job whose worker died.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { migrate, type Database } from '../../src/shared/db/index.js';
import { backoffMs, cancelJobs, enqueue, JobEngine, madeJobsDue, runNow, supersedeJobs } from '../../src/shared/jobs.js';
import type { Tx } from '../../src/shared/db/index.js';
import { moduleMigrations } from '../../src/modules/index.js';
import { loadConfig } from '../../src/shared/config.js';
import { DB_KINDS, openScratchDatabase, skipUnless } from '../helpers/server.js';
import { sleep, waitFor } from '../helpers/util.js';

// The job kinds these tests register, typed like the modules' own.
declare module '../../src/shared/jobs.js' {
  interface JobMap {
    't.once': { n: number };
    't.steps': { step: number };
    't.fail': null;
    't.rollback': null;
    't.later': null;
    't.orphan': null;
    't.shared': null;
    't.io': { n: number };
    't.db': null;
    't.rec': { n: number };
    't.taken': null;
    't.taken2': null | { step: number };
    't.yield': { n: number };
  }
}

const log = pino({ level: 'silent' });

/** A job body that waits until `release()`, counting the runs under way (`running`) and the most at once (`most`). */
function heldJobs() {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const held = {
    running: 0,
    most: 0,
    release: () => release(),
    run: async () => {
      held.most = Math.max(held.most, ++held.running);
      await gate;
      held.running--;
    },
  };
  return held;
}

for (const kind of DB_KINDS) {
  describe(`job engine [${kind}]`, { skip: await skipUnless(kind) }, () => {
    let database: Database;
    let cleanup: () => Promise<void>;
    const engines: JobEngine[] = [];
    const engine = (opts = {}) => {
      const e = new JobEngine(database, log, { pollMs: 20, leaseMs: 1000, retryBaseMs: 20, ...opts });
      engines.push(e);
      return e;
    };
    const row = (id: string) => database.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    before(async () => {
      ({ database, cleanup } = await openScratchDatabase(kind, 'slipway-jobs-'));
      await migrate(database.db, moduleMigrations());
    });
    after(async () => {
      await Promise.all(engines.map((e) => e.stop()));
      await database?.close();
      await cleanup?.();
    });

    it('runs a due job once and marks it done', async () => {
      const e = engine();
      const seen: unknown[] = [];
      e.register('t.once', { run: async (_tx, job) => void seen.push(job.payload) });
      await e.start();
      const id = await database.db.transaction().execute((tx) => enqueue(tx, { kind: 't.once', payload: { n: 1 } }));
      await waitFor('done', async () => (await row(id)).status === 'done');
      assert.deepEqual(seen, [{ n: 1 }]);
      await e.stop();
    });

    it('reschedules a job with a new payload until it finishes', async () => {
      const e = engine();
      e.register('t.steps', {
        run: async (_tx, job) => (job.payload.step < 3 ? { rescheduleAt: new Date(Date.now() + 10), payload: { step: job.payload.step + 1 } } : undefined),
      });
      await e.start();
      const id = await database.db.transaction().execute((tx) => enqueue(tx, { kind: 't.steps', payload: { step: 0 } }));
      await waitFor('done', async () => (await row(id)).status === 'done');
      assert.deepEqual(JSON.parse((await row(id)).payload), { step: 3 });
      await e.stop();
    });

    it('retries a failing job with backoff, then fails it and calls onFailure', async () => {
      const e = engine();
      const attempts: number[] = [];
      let failedWith = '';
      e.register('t.fail', {
        run: async (_tx, job) => {
          attempts.push(job.attempts);
          throw new Error(`boom ${job.attempts}`);
        },
        onFailure: async (_tx, _job, err) => void (failedWith = err.message),
      });
      await e.start();
      const id = await database.db.transaction().execute((tx) => enqueue(tx, { kind: 't.fail', payload: null, maxAttempts: 3 }));
      await waitFor('failed', async () => (await row(id)).status === 'failed');
      assert.deepEqual(attempts, [1, 2, 3]);
      assert.equal(failedWith, 'boom 3');
      assert.equal((await row(id)).last_error, 'boom 3');
      await e.stop();
    });

    it('jobs that wait on the network run in slots of their own: they neither starve nor outnumber the rest', async () => {
      const e = engine({ concurrency: 1, ioConcurrency: 3 });
      const held = heldJobs();
      e.register('t.io', { transactional: false, io: true, run: held.run });
      let dbRan = false;
      e.register('t.db', { run: async () => void (dbRan = true) });
      const ios = await database.db.transaction().execute(async (tx) => {
        const ids = [];
        for (let n = 0; n < 5; n++) ids.push(await enqueue(tx, { kind: 't.io', payload: { n } }));
        return ids;
      });
      await e.start();
      await waitFor('three I/O jobs waiting', async () => held.running === 3);
      const dbJob = await database.db.transaction().execute((tx) => enqueue(tx, { kind: 't.db', payload: null }));
      e.wake();
      // The database slot is free while every I/O slot waits.
      await waitFor('the other job done', async () => (await row(dbJob)).status === 'done');
      assert.ok(dbRan);
      assert.equal(held.most, 3, 'no more I/O jobs at once than their slots');
      held.release();
      for (const id of ios) await waitFor(`I/O job ${id} done`, async () => (await row(id)).status === 'done');
      assert.equal(held.most, 3);
      await e.stop();
    });

    it('while API requests are handled, the database slots take new jobs only up to their number under load; a running job goes on', async () => {
      const e = engine({ concurrency: 4, concurrencyUnderLoad: 1 });
      const held = heldJobs();
      e.register('t.yield', { transactional: false, run: held.run });
      const ids = await database.db.transaction().execute(async (tx) => {
        const out = [];
        for (let n = 0; n < 5; n++) out.push(await enqueue(tx, { kind: 't.yield', payload: { n } }));
        return out;
      });
      e.foreground = 1;
      await e.start();
      try {
        await waitFor('a job running', async () => held.running > 0);
        // Polls and wakes while requests are handled claim nothing more.
        for (let i = 0; i < 5; i++) {
          e.wake();
          await sleep(30);
        }
        assert.equal(held.most, 1, 'one job at a time while requests are handled');
        e.foreground = 0;
        e.wake();
        await waitFor('all four slots busy once no request is handled', async () => held.running === 4);
      } finally {
        held.release();
      }
      for (const id of ids) await waitFor(`job ${id} done`, async () => (await row(id)).status === 'done');
      assert.equal(held.most, 4);
      await e.stop();
    });

    it('jobs that end together are completed in one transaction; one whose writes fail does not fail the others', async () => {
      const e = engine({ ioConcurrency: 8 });
      let release!: () => void;
      let held = new Promise<void>((r) => (release = r));
      const txs: { n: number; tx: unknown }[] = [];
      const writeErrors: unknown[] = [];
      let started = 0;
      e.register('t.rec', {
        transactional: false,
        io: true,
        run: async (_db, job) => {
          started++;
          await held;
          return {
            record: async (tx) => {
              txs.push({ n: job.payload.n, tx });
              // Job 6 still writes when job 5's record fails: the transaction must wait for it
              // before it ends (a write sent after the rollback fails, or runs on its own).
              if (job.payload.n === 6) await sleep(50);
              await tx
                .insertInto('settings')
                .values({ key: `recorded-${job.id}`, value: String(job.payload.n) })
                .execute()
                .catch((e: unknown) => {
                  writeErrors.push(e);
                  throw e;
                });
              if (job.payload.n === 5) throw new Error('writes of job 5 fail');
            },
          };
        },
      });
      const enqueueThree = (from: number) =>
        database.db.transaction().execute(async (tx) => {
          const out = [];
          for (let n = from; n < from + 3; n++) out.push(await enqueue(tx, { kind: 't.rec', payload: { n }, maxAttempts: 1 }));
          return out;
        });
      const status = (ids: string[]) => Promise.all(ids.map(async (id) => (await row(id)).status));
      await e.start();
      // Three that succeed: recorded in one transaction.
      const first = await enqueueThree(1);
      e.wake();
      await waitFor('three running', async () => started === 3);
      release();
      for (const id of first) await waitFor(`job ${id} done`, async () => (await row(id)).status === 'done');
      assert.equal(txs.length, 3);
      assert.equal(new Set(txs.map((t) => t.tx)).size, 1, 'the three ended together and were recorded in one transaction');
      // Three of which one's writes fail: the others are done, the failed one left nothing.
      held = new Promise<void>((r) => (release = r));
      const second = await enqueueThree(4);
      e.wake();
      await waitFor('three more running', async () => started === 6);
      release();
      for (const id of second) await waitFor(`job ${id} ended`, async () => ['done', 'failed'].includes((await row(id)).status));
      assert.deepEqual(await status(second), ['done', 'failed', 'done']);
      assert.equal((await row(second[1]!)).last_error, 'writes of job 5 fail');
      assert.deepEqual(writeErrors, [], 'no record wrote after its transaction ended');
      const kept = await database.db.selectFrom('settings').select('key').where('key', 'like', 'recorded-%').execute();
      assert.deepEqual(kept.map((k) => k.key).sort(), [...first, second[0], second[2]].map((id) => `recorded-${id}`).sort(), 'the failed job left no writes');
      await e.stop();
    });

    it('a transactional job that fails leaves none of its writes behind', async () => {
      const e = engine();
      e.register('t.rollback', {
        run: async (tx) => {
          await tx.insertInto('settings').values({ key: 'written-by-failing-job', value: 'x' }).execute();
          throw new Error('after the write');
        },
      });
      await e.start();
      const id = await database.db.transaction().execute((tx) => enqueue(tx, { kind: 't.rollback', payload: null, maxAttempts: 1 }));
      await waitFor('failed', async () => (await row(id)).status === 'failed');
      assert.equal(await database.db.selectFrom('settings').select('key').where('key', '=', 'written-by-failing-job').executeTakeFirst(), undefined);
      await e.stop();
    });

    it('a job taken over while it ran commits none of its writes; its new owner runs it again', async () => {
      const e = engine();
      let runs = 0;
      e.register('t.taken', {
        run: async (tx, job) => {
          runs++;
          await tx
            .insertInto('settings')
            .values({ key: `taken-run-${runs}`, value: 'x' })
            .execute();
          // The first run outlives its lease and another worker takes the job over meanwhile (here
          // written in the run's own transaction: on SQLite no other connection can write now).
          if (runs === 1) await tx.updateTable('jobs').set({ lease_owner: 'another-worker' }).where('id', '=', job.id).execute();
        },
      });
      await e.start();
      const id = await database.db.transaction().execute((tx) => enqueue(tx, { kind: 't.taken', payload: null }));
      // Rolled back, the first run leaves the job this worker's until its lease runs out; then it is taken over again.
      await waitFor('done', async () => (await row(id)).status === 'done', 10_000);
      const written = await database.db.selectFrom('settings').select('key').where('key', 'like', 'taken-run-%').execute();
      assert.deepEqual(
        written.map((w) => w.key),
        ['taken-run-2'],
      );
      assert.equal((await row(id)).attempts, 2);
      await e.stop();
    });

    it('a job taken over before its reschedule is recorded commits none of its writes, and is not counted as a failed attempt', async () => {
      // The engine's log, to tell the lease check from a failure of the handler.
      const lines: { msg: string }[] = [];
      const e = new JobEngine(database, pino({ level: 'warn' }, { write: (l: string) => void lines.push(JSON.parse(l)) }), {
        pollMs: 20,
        leaseMs: 1000,
        retryBaseMs: 20,
      });
      engines.push(e);
      let runs = 0;
      e.register('t.taken2', {
        run: async (tx, job) => {
          runs++;
          await tx
            .insertInto('settings')
            .values({ key: `taken2-run-${runs}`, value: 'x' })
            .execute();
          if (runs === 1) await tx.updateTable('jobs').set({ lease_owner: 'another-worker' }).where('id', '=', job.id).execute();
          return runs < 3 ? { rescheduleAt: new Date(), payload: { step: runs } } : undefined;
        },
      });
      await e.start();
      const id = await database.db.transaction().execute((tx) => enqueue(tx, { kind: 't.taken2', payload: null }));
      await waitFor('done', async () => (await row(id)).status === 'done', 10_000);
      const written = await database.db.selectFrom('settings').select('key').where('key', 'like', 'taken2-run-%').orderBy('key').execute();
      assert.deepEqual(
        written.map((w) => w.key),
        ['taken2-run-2', 'taken2-run-3'],
      );
      assert.deepEqual(JSON.parse((await row(id)).payload), { step: 2 });
      assert.equal((await row(id)).last_error, null);
      assert.ok(
        lines.some((l) => /no longer this worker's/.test(l.msg)),
        JSON.stringify(lines),
      );
      assert.ok(!lines.some((l) => l.msg === 'job attempt failed'), JSON.stringify(lines));
      await e.stop();
    });

    it('does not run a job before its time, and cancelled jobs never run', async () => {
      const e = engine();
      let ran = 0;
      e.register('t.later', { run: async () => void ran++ });
      await e.start();
      const later = await database.db
        .transaction()
        .execute((tx) => enqueue(tx, { kind: 't.later', payload: null, runAt: new Date(Date.now() + 400), subjectId: 'subject-a' }));
      const cancelled = await database.db
        .transaction()
        .execute((tx) => enqueue(tx, { kind: 't.later', payload: null, runAt: new Date(Date.now() + 200), subjectId: 'subject-b' }));
      await database.db.transaction().execute((tx) => cancelJobs(tx, 'subject-b'));
      assert.equal((await row(cancelled)).status, 'cancelled');
      assert.equal((await row(later)).status, 'queued');
      await sleep(150);
      assert.equal(ran, 0);
      await waitFor('later job done', async () => (await row(later)).status === 'done');
      assert.equal(ran, 1);
      assert.equal((await row(cancelled)).status, 'cancelled');
      await e.stop();
    });

    it('takes over a job whose worker died once the lease expires', async () => {
      // A job left `running` by a worker that no longer exists, its lease just expired.
      const id = await database.db.transaction().execute((tx) => enqueue(tx, { kind: 't.orphan', payload: null }));
      await database.db
        .updateTable('jobs')
        .set({ status: 'running', lease_owner: 'dead-worker', lease_expires_at: new Date(Date.now() + 300).toISOString(), attempts: 1 })
        .where('id', '=', id)
        .execute();
      const e = engine();
      let owner = '';
      e.register('t.orphan', { run: async () => void (owner = e.workerId) });
      // On SQLite, start() releases every running job at once (one process owns the file).
      await e.start();
      await waitFor('taken over', async () => (await row(id)).status === 'done');
      assert.equal(owner, e.workerId);
      assert.equal((await row(id)).attempts, 2);
      await e.stop();
    });

    it('two engines never run the same job twice', { skip: kind === 'sqlite' ? 'one process owns a SQLite file' : false }, async () => {
      const a = engine();
      const b = engine();
      const runs = new Map<string, number>();
      for (const e of [a, b]) e.register('t.shared', { run: async (_tx, job) => void runs.set(job.id, (runs.get(job.id) ?? 0) + 1) });
      const ids = await database.db
        .transaction()
        .execute(async (tx) => Promise.all(Array.from({ length: 60 }, () => enqueue(tx, { kind: 't.shared', payload: null }))));
      await Promise.all([a.start(), b.start()]);
      await waitFor('all done', async () => {
        const left = await database.db.selectFrom('jobs').select('id').where('kind', '=', 't.shared').where('status', '!=', 'done').execute();
        return left.length === 0;
      });
      assert.equal(runs.size, ids.length);
      assert.ok([...runs.values()].every((n) => n === 1));
    });

    it('supersedeJobs hands one queued job of the superseded subjects over, cancels the rest, and queues a job when none was queued', async () => {
      // No engine runs here: the jobs stay as these transactions leave them.
      const queue = (subject: string) =>
        database.db.transaction().execute((tx) => enqueue(tx, { kind: 't.taken', payload: null, subjectId: subject, runAt: new Date(Date.now() + 3600_000) }));
      const jobsOf = (subject: string) => database.db.selectFrom('jobs').selectAll().where('subject_id', '=', subject).orderBy('created_at').execute();
      const supersede = (from: string[], subject: string, runAt: Date) =>
        database.db.transaction().execute((tx) => supersedeJobs(tx, from, { kind: 't.taken', payload: null, subjectId: subject, runAt }));
      const tag = `${Date.now()}`;

      // One superseded subject with a queued job (after an attempt that failed): the same row, fresh.
      const old = await queue(`a-${tag}`);
      await database.db.updateTable('jobs').set({ attempts: 2, last_error: 'boom' }).where('id', '=', old).execute();
      const due = new Date(Date.now() + 60_000);
      await supersede([`a-${tag}`], `b-${tag}`, due);
      assert.deepEqual(await jobsOf(`a-${tag}`), []);
      const [taken, ...more] = await jobsOf(`b-${tag}`);
      assert.equal(more.length, 0);
      assert.equal(taken!.id, old);
      assert.equal(taken!.status, 'queued');
      assert.equal(taken!.attempts, 0);
      assert.equal(taken!.last_error, null);
      assert.equal(taken!.run_at, due.toISOString());

      // None of its jobs queued (it is running): a new job is queued, the running one is left alone.
      await database.db.updateTable('jobs').set({ status: 'running' }).where('id', '=', old).execute();
      await supersede([`b-${tag}`], `c-${tag}`, due);
      assert.equal((await row(old)).status, 'running');
      const [fresh, ...others] = await jobsOf(`c-${tag}`);
      assert.equal(others.length, 0);
      assert.notEqual(fresh!.id, old);
      assert.deepEqual([fresh!.status, fresh!.kind, fresh!.attempts, fresh!.max_attempts, fresh!.run_at], ['queued', 't.taken', 0, 10, due.toISOString()]);

      // Two superseded subjects, both queued: one job is handed over, the other cancelled.
      const d1 = await queue(`d1-${tag}`);
      const d2 = await queue(`d2-${tag}`);
      await supersede([`d1-${tag}`, `d2-${tag}`], `e-${tag}`, due);
      const handed = await jobsOf(`e-${tag}`);
      assert.equal(handed.length, 1);
      assert.ok([d1, d2].includes(handed[0]!.id));
      const other = await row(handed[0]!.id === d1 ? d2 : d1);
      assert.equal(other.status, 'cancelled');

      // Nothing superseded: a new job.
      await supersede([], `f-${tag}`, due);
      assert.equal((await jobsOf(`f-${tag}`)).length, 1);
    });

    it('a transaction is known to have made work due now (the router wakes the runners after it commits) only when it did', async () => {
      // No engine runs here. Each case is one transaction, rolled back: what it says of itself is what is checked.
      const tag = `due-${Date.now()}`;
      const later = new Date(Date.now() + 3600_000);
      const said = async (work: (tx: Tx) => Promise<unknown>) => {
        let due: boolean | undefined;
        await database.db
          .transaction()
          .execute(async (tx) => {
            await work(tx);
            due = madeJobsDue(tx);
            throw new Error('rolled back');
          })
          .catch(() => {});
        return due;
      };
      await database.db.transaction().execute((tx) => enqueue(tx, { kind: 't.taken', payload: null, subjectId: `${tag}-a`, runAt: later }));
      assert.equal(await said(async () => {}), false, 'nothing queued');
      assert.equal(await said((tx) => enqueue(tx, { kind: 't.taken', payload: null })), true, 'a job due now');
      assert.equal(await said((tx) => enqueue(tx, { kind: 't.taken', payload: null, runAt: later })), false, 'a job due later');
      assert.equal(
        await said((tx) => supersedeJobs(tx, [`${tag}-a`], { kind: 't.taken', payload: null, subjectId: `${tag}-b`, runAt: later })),
        false,
        'handed over, due later',
      );
      assert.equal(
        await said((tx) => supersedeJobs(tx, [`${tag}-a`], { kind: 't.taken', payload: null, subjectId: `${tag}-b` })),
        true,
        'handed over, due now',
      );
      assert.equal(await said((tx) => cancelJobs(tx, `${tag}-a`)), false, 'cancelled');
      assert.equal(await said((tx) => runNow(tx, [`${tag}-a`], 't.taken')), true, 'made due now');
    });
  });
}

describe('job backoff', () => {
  it('grows exponentially with jitter and is capped', () => {
    for (let attempt = 1; attempt <= 6; attempt++) {
      const base = 1000 * 2 ** (attempt - 1);
      const v = backoffMs(attempt);
      assert.ok(v >= base * 0.8 && v <= base * 1.2, `${attempt}: ${v}`);
    }
    assert.ok(backoffMs(40) <= 300_000 * 1.2);
  });
});

describe('job settings', () => {
  it('are checked at start; the slots under load are unset unless given', () => {
    const d = loadConfig({}, {}).jobs;
    assert.deepEqual([d.concurrency, d.concurrencyUnderLoad, d.ioConcurrency], [8, undefined, 64]);
    assert.equal(loadConfig({}, { SLIPWAY_JOB_CONCURRENCY_UNDER_LOAD: '3' }).jobs.concurrencyUnderLoad, 3);
    for (const [name, v] of [
      ['SLIPWAY_JOB_CONCURRENCY_UNDER_LOAD', 'two'],
      ['SLIPWAY_JOB_CONCURRENCY', '0'],
      ['SLIPWAY_JOB_POLL_MS', '-5'],
    ])
      assert.throws(() => loadConfig({}, { [name!]: v }), new RegExp(`${name} must be a positive integer`));
  });
});
