// The job engine: workers claim due jobs with a lease (PostgreSQL: FOR UPDATE SKIP LOCKED;
// SQLite: one writer), run the handler, and record the outcome. A job whose worker died is taken
// over when its lease expires; on SQLite (one process) leases of the previous run are released at
// start. A handler may reschedule its job (multi-step work such as a deployment's phases), and
// failures are retried with exponential backoff and jitter. A job's completion commits only while
// the job is still this worker's (job-leases.ts). Jobs are queued through jobs.ts.
import { committed } from './db/after-commit.js';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { FastifyBaseLogger } from 'fastify';
import type { Database, Tx } from './db/index.js';
import type { JobsTable } from './db/schema.js';
import { fixedShape } from './db/postgres-client.js';
import { listValues } from './db/reusable.js';
import { Coalescer } from './coalesce.js';
import { held, isLeaseLost, markDone, requeue } from './job-leases.js';
import type { Job, JobKind, JobName, Outcome, Recorded } from './jobs.js';
import { inSpan, tracer } from './observability/trace.js';
import type { JobOutcome } from './observability/metrics.js';

/** Exponential backoff with ±20 % jitter: 1 s, 2 s, 4 s ... capped at 5 minutes. */
export function backoffMs(attempt: number, baseMs = 1000, capMs = 300_000): number {
  const raw = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(raw * (0.8 + Math.random() * 0.4));
}

export interface JobEngineOptions {
  concurrency?: number;
  /**
   * Slots of the work that holds the database while API requests are being handled (see
   * `JobEngine.foreground`): background work yields the cores and pooled connections to them.
   * Default 2 on PostgreSQL, all of `concurrency` on SQLite.
   */
  concurrencyUnderLoad?: number;
  /** Slots of the `io` kinds. */
  ioConcurrency?: number;
  pollMs?: number;
  leaseMs?: number;
  retryBaseMs?: number;
}

export class JobEngine {
  readonly workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private kinds = new Map<string, JobKind<JobName>>();
  /** The two classes of slots: work that holds the database, and `io` work that waits on the network. */
  private slots = {
    db: { running: new Set<Promise<void>>(), size: 0, underLoad: 0, kinds: [] as string[] },
    io: { running: new Set<Promise<void>>(), size: 0, underLoad: 0, kinds: [] as string[] },
  };
  /**
   * API requests this process is handling now (the router counts them). While there are any, the
   * database's slots take new jobs only up to `concurrencyUnderLoad`: a job that is running goes
   * on, but the API comes first for the cores and the pooled connections, and background work
   * (say, the phases of many deployments at once) cannot push its latency up. The `io` slots wait
   * on the network and are not limited.
   */
  foreground = 0;
  /** Told what each attempt came to (metrics). */
  observer?: (kind: string, outcome: JobOutcome) => void;
  /** The attempts whose completion rescheduled them (set in `finish`, read once it committed). */
  private rescheduled = new WeakSet<JobsTable>();
  /** When the claim last looked for jobs whose worker died (they appear a lease after it did). */
  private orphansCheckedAt = 0;
  private timer?: NodeJS.Timeout;
  private stopped = true;
  private polling = false;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly retryBaseMs: number;

  constructor(
    private database: Database,
    private log: FastifyBaseLogger,
    opts: JobEngineOptions = {},
  ) {
    this.slots.db.size = opts.concurrency ?? 8;
    this.slots.io.size = this.slots.io.underLoad = opts.ioConcurrency ?? 64;
    // On SQLite the jobs' writes share the requests' group commits (one writer): holding jobs back
    // does not make the API faster there, so they keep their slots unless told otherwise.
    const underLoad = opts.concurrencyUnderLoad ?? (database.kind === 'postgres' ? 2 : this.slots.db.size);
    this.slots.db.underLoad = Math.min(this.slots.db.size, underLoad);
    this.pollMs = opts.pollMs ?? 100;
    this.leaseMs = opts.leaseMs ?? 15_000;
    this.retryBaseMs = opts.retryBaseMs ?? 1000;
  }

  register<K extends JobName>(kind: K, handler: JobKind<K>): void {
    this.kinds.set(kind, handler as unknown as JobKind<JobName>);
    this.slots[handler.io && handler.transactional === false ? 'io' : 'db'].kinds.push(kind);
  }

  /**
   * Whether this worker still owns the running job `jobId`; on PostgreSQL the row is also locked
   * for the rest of `tx`, so no other worker takes it over meanwhile. For non-transactional kinds
   * that open their own transaction.
   */
  async owns(tx: Tx, jobId: string): Promise<boolean> {
    const q = tx.selectFrom('jobs').select('status').where('id', '=', jobId).where('lease_owner', '=', this.workerId);
    const row = await (this.database.kind === 'postgres' ? q.forUpdate() : q).executeTakeFirst();
    return row?.status === 'running';
  }

  /**
   * Whether a job of these kinds for the subject, other than `exceptJobId`, is running under a live
   * lease (e.g. a deletion waits for the work still touching what it removes).
   */
  async othersRunning(subjectId: string, kinds: readonly JobName[], exceptJobId: string): Promise<boolean> {
    const row = await this.database.db
      .selectFrom('jobs')
      .select('id')
      .where('subject_id', '=', subjectId)
      .where('kind', 'in', [...kinds])
      .where('status', '=', 'running')
      .where('id', '!=', exceptJobId)
      .where('lease_expires_at', '>', new Date().toISOString())
      .executeTakeFirst();
    return !!row;
  }

  async start(): Promise<void> {
    if (this.database.kind === 'sqlite') {
      // One process owns a SQLite file: whatever was running when it last stopped is due again.
      await this.database.db
        .updateTable('jobs')
        .set({ status: 'queued', lease_owner: null, lease_expires_at: null, updated_at: new Date().toISOString() })
        .where('status', '=', 'running')
        .execute();
    }
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.allSettled([...this.slots.db.running, ...this.slots.io.running]);
  }

  /** Asks the local worker to look for due jobs now (after a commit that enqueued work). */
  wake(): void {
    if (!this.stopped) this.schedule(0);
  }

  private schedule(ms: number) {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.poll(), ms);
    this.timer.unref?.();
  }

  private async poll() {
    if (this.polling || this.stopped) return;
    this.polling = true;
    let claimed = 0;
    try {
      // One statement claims as many due jobs as there are free slots (a burst of deliveries or
      // deployments costs one claim per batch, not one per job).
      for (const slots of [this.slots.db, this.slots.io]) {
        for (;;) {
          const size = this.foreground > 0 ? slots.underLoad : slots.size;
          if (this.stopped || !slots.kinds.length || slots.running.size >= size) break;
          const rows = await this.claim(size - slots.running.size, slots.kinds);
          if (!rows.length) break;
          claimed += rows.length;
          for (const row of rows) {
            const p = this.execute(row).finally(() => {
              slots.running.delete(p);
              this.wake();
            });
            slots.running.add(p);
          }
        }
      }
    } catch (e) {
      this.log.error({ err: e }, 'job poll failed');
    } finally {
      this.polling = false;
      this.schedule(claimed > 0 ? 0 : this.pollMs);
    }
  }

  /**
   * Claims up to `limit` jobs of `kinds`: those whose lease expired (their worker died) first, then
   * the due queued ones in order of run_at. Each is one UPDATE ... RETURNING; the queued one walks
   * the index (status, run_at, id) and stops after `limit` rows. Expired leases are looked for at
   * most every tenth of a lease (a lease outlives its worker by up to a whole lease anyway), not
   * at every claim: a burst of short jobs claims once per job that ends.
   */
  private async claim(limit: number, kinds: string[]): Promise<JobsTable[]> {
    const now = new Date();
    const nowIso = now.toISOString();
    const lease = new Date(now.getTime() + this.leaseMs).toISOString();
    const lock = this.database.kind === 'postgres' ? sql` FOR UPDATE SKIP LOCKED` : sql``;
    // A claim's text is the same for every claim of a slot class (its kinds): a fixed shape.
    const take = async (due: ReturnType<typeof sql>, n: number) =>
      (
        await this.database.db.executeQuery(
          fixedShape(
            sql<JobsTable>`
      UPDATE jobs SET status = 'running', lease_owner = ${this.workerId}, lease_expires_at = ${lease},
        attempts = attempts + 1, updated_at = ${nowIso}
      WHERE id IN (
        SELECT id FROM jobs WHERE kind IN (${sql.join(kinds)}) AND ${due} ORDER BY run_at, id LIMIT ${n}${lock}
      )
      RETURNING *`.compile(this.database.db),
          ),
        )
      ).rows;
    let orphaned: JobsTable[] = [];
    if (now.getTime() - this.orphansCheckedAt >= this.leaseMs / 10) {
      orphaned = await take(sql`status = 'running' AND lease_expires_at < ${nowIso}`, limit);
      // Looked again at once while it finds some (more may be waiting than there were slots).
      if (orphaned.length < limit) this.orphansCheckedAt = now.getTime();
      else return orphaned;
    }
    const queued = await take(sql`status = 'queued' AND run_at <= ${nowIso}`, limit - orphaned.length);
    // RETURNING does not keep the subquery's order.
    return [...orphaned, ...queued.sort((a, b) => (a.run_at < b.run_at ? -1 : a.run_at > b.run_at ? 1 : a.id < b.id ? -1 : 1))];
  }

  /** Runs one attempt; in a span continuing the trace that queued the job, when tracing. */
  private execute(row: JobsTable): Promise<void> {
    const t = tracer();
    return t ? t.job(row.kind, row.id, row.traceparent, () => this.attempt(row)) : this.attempt(row);
  }

  private async attempt(row: JobsTable): Promise<void> {
    const kind = this.kinds.get(row.kind)!;
    const job = { id: row.id, kind: row.kind, payload: JSON.parse(row.payload), attempts: row.attempts, subjectId: row.subject_id } as Job;
    const heartbeat = setInterval(
      () => {
        void this.database.db
          .updateTable('jobs')
          .set({ lease_expires_at: new Date(Date.now() + this.leaseMs).toISOString() })
          .where('id', '=', row.id)
          .where('lease_owner', '=', this.workerId)
          .execute()
          .catch(() => {});
      },
      Math.max(1000, this.leaseMs / 3),
    );
    heartbeat.unref?.();
    const db = this.database.db;
    try {
      if (kind.transactional === false) {
        const outcome = await kind.run(db, job);
        const failed = await this.finishing.call('', { row, outcome });
        if (failed) throw failed;
      } else {
        let done: object | null = null;
        await inSpan('db.transaction', () =>
          db.transaction().execute(async (tx) => {
            done = tx;
            // Another worker takes a job over only once its lease has run out: a job claimed a
            // moment ago starts without asking (one round trip fewer per job), an older claim checks
            // first. Either way finish() commits nothing unless the job is still this worker's.
            if (!this.freshlyClaimed(row)) {
              const mine = await tx.selectFrom('jobs').select('status').where('id', '=', row.id).where('lease_owner', '=', this.workerId).executeTakeFirst();
              if (!mine || mine.status !== 'running') return;
            }
            await this.finish(tx, [{ row, outcome: await kind.run(tx, job) }]);
          }),
        );
        if (done) await committed(done);
      }
      this.observer?.(row.kind, this.rescheduled.has(row) ? 'rescheduled' : 'done');
    } catch (e) {
      if (isLeaseLost(e)) {
        this.log.warn({ job: row.id, kind: row.kind }, e.message);
        this.observer?.(row.kind, 'lease_lost');
        return;
      }
      const err = e instanceof Error ? e : new Error(String(e));
      this.log.warn({ err, job: row.id, kind: row.kind, attempt: row.attempts }, 'job attempt failed');
      try {
        await db.transaction().execute(async (tx) => {
          const last = row.attempts >= row.max_attempts;
          await tx
            .updateTable('jobs')
            .set({
              status: last ? 'failed' : 'queued',
              run_at: new Date(Date.now() + backoffMs(row.attempts, this.retryBaseMs)).toISOString(),
              lease_owner: null,
              lease_expires_at: null,
              last_error: err.message.slice(0, 2000),
              updated_at: new Date().toISOString(),
            })
            .where('id', '=', row.id)
            .where('lease_owner', '=', this.workerId)
            .execute();
          if (last) await kind.onFailure?.(tx, job, err);
        });
        this.observer?.(row.kind, row.attempts >= row.max_attempts ? 'failed' : 'retried');
      } catch (e2) {
        this.log.error({ err: e2, job: row.id }, 'could not record job failure');
      }
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * Non-transactional jobs that end in the same turn of the event loop, or while another one's
   * completion is being committed, are completed together, in one transaction (one commit for a
   * burst of deliveries, not one each).
   * Should that transaction fail, each job is completed in a transaction of its own, so one job's
   * failing writes cannot fail the others. Resolves to the job's error, if any.
   */
  private finishing = new Coalescer<{ row: JobsTable; outcome: Outcome<JobName> | Recorded<JobName> }, Error | undefined>(async (_key, ended) => {
    const db = this.database.db;
    const alone = (e: (typeof ended)[number]) =>
      db
        .transaction()
        .execute(async (tx) => this.finish(tx, [e]))
        .then(
          () => undefined,
          (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
        );
    if (ended.length === 1) return [await alone(ended[0]!)];
    try {
      await db.transaction().execute(async (tx) => this.finish(tx, ended));
      return ended.map(() => undefined);
    } catch {
      return Promise.all(ended.map(alone));
    }
  }, true);

  /**
   * Records each handler's result (first its own writes, for a `Recorded` one, all of them started
   * together) and completes or reschedules its job; the jobs that are done are marked in one statement.
   */
  private async finish(tx: Tx, ended: { row: JobsTable; outcome: Outcome<JobName> | Recorded<JobName> }[]) {
    const done: string[] = [];
    // The records run together (a kind may write those of one transaction in one statement). All
    // of them end before a failure is thrown: none may still be writing when the transaction rolls
    // back (a statement sent after the rollback would run, and commit, on its own).
    const settled = await Promise.allSettled(ended.map(({ outcome: r }) => (r && 'record' in r ? r.record(tx) : r)));
    const failure = settled.find((r) => r.status === 'rejected');
    if (failure) throw failure.reason;
    const outcomes = settled.map((r) => (r as PromiseFulfilledResult<Outcome<JobName>>).value);
    for (const [i, { row }] of ended.entries()) {
      const outcome = outcomes[i];
      if (!(outcome && 'rescheduleAt' in outcome)) {
        done.push(row.id);
        continue;
      }
      this.rescheduled.add(row);
      const values = {
        worker: this.workerId,
        ids: row.id,
        n: 1,
        now: new Date().toISOString(),
        runAt: outcome.rescheduleAt.toISOString(),
        payload: outcome.payload !== undefined ? JSON.stringify(outcome.payload) : undefined,
      };
      await held(tx, (checked) => requeue(tx, [values.payload !== undefined ? 'payload' : 'same', checked], values), values);
    }
    if (!done.length) return;
    const values = { worker: this.workerId, ids: done.join(', '), n: done.length, now: new Date().toISOString(), ...listValues(done, 'job') };
    await held(tx, (checked) => markDone(tx, [done.length, checked], values), values);
  }

  /** Whether `row` was claimed so recently that its lease cannot have run out (two thirds of it left). */
  private freshlyClaimed(row: JobsTable): boolean {
    return !!row.lease_expires_at && Date.parse(row.lease_expires_at) - Date.now() > (2 * this.leaseMs) / 3;
  }

  /** For tests and benchmarks: resolves when no queued or running job is due before `horizonMs`. */
  async idle(horizonMs = 0): Promise<void> {
    for (;;) {
      const horizon = new Date(Date.now() + horizonMs).toISOString();
      const n = await this.database.db
        .selectFrom('jobs')
        .select((eb) => eb.fn.countAll().as('n'))
        .where((eb) => eb.or([eb('status', '=', 'running'), eb.and([eb('status', '=', 'queued'), eb('run_at', '<=', horizon)])]))
        .executeTakeFirst();
      if (Number(n?.n ?? 0) === 0) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
