// The durable job engine. Background work (deployments, restarts, restores, backups, cron runs,
// webhook deliveries) is a row in `jobs`, inserted in the same transaction as the state change
// that caused it. Workers claim due jobs with a lease (PostgreSQL: FOR UPDATE SKIP LOCKED;
// SQLite: one writer), run the handler, and record the outcome. A job whose worker died is taken
// over when its lease expires; on SQLite (one process) leases of the previous run are released
// at start. A handler may reschedule its job (multi-step work such as a deployment's phases), and
// failures are retried with exponential backoff and jitter.
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { CompiledQuery, sql, type UpdateQueryBuilder, type UpdateResult } from 'kysely';
import type { FastifyBaseLogger } from 'fastify';
import type { Database, Tx } from './db/index.js';
import type { DB, JobsTable } from './db/schema.js';
import { newId } from './ids.js';
import { fixedShape, later } from './db/postgres-client.js';
import { insertRows, listOf, listValues, reusable, reusableBy } from './db/reusable.js';
import { Coalescer } from './coalesce.js';
import { inPostgresTransaction } from './db/dialect.js';

/** Job kind -> payload. Filled by the modules by declaration merging (as `DB` is). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface JobMap {}
export type JobName = keyof JobMap & string;

export interface Job<K extends JobName = JobName> {
  id: string;
  kind: K;
  payload: JobMap[K];
  attempts: number;
  subjectId: string | null;
}

/** What a handler returns: nothing (done) or a time to run again with an optional new payload. */
export type Outcome<K extends JobName> = void | { rescheduleAt: Date; payload?: JobMap[K] };

/**
 * What a non-transactional handler may return instead: the writes that record its result, run in
 * the transaction that completes the job (one commit for both), and the outcome they decide. The
 * records of jobs completed together are started together, in the same transaction: they must not
 * depend on each other's writes.
 */
export interface Recorded<K extends JobName> {
  record(tx: Tx): Promise<Outcome<K>>;
}

export interface JobKind<K extends JobName> {
  /**
   * Runs inside one transaction together with the job's completion (default). Set false for work
   * that waits on the network or opens its own transaction; `run` then gets the plain database.
   */
  transactional?: boolean;
  /**
   * The job waits on the network and holds no database connection meanwhile (e.g. a webhook
   * delivery; only with `transactional: false`): it runs in the I/O slots
   * (SLIPWAY_JOB_IO_CONCURRENCY), apart from the slots of the work that holds the database
   * (SLIPWAY_JOB_CONCURRENCY), so many can wait at once without starving or outnumbering the rest.
   */
  io?: boolean;
  /** Called (in a transaction) when the last attempt failed. */
  onFailure?(tx: Tx, job: Job<K>, error: Error): Promise<void>;
  run(tx: Tx, job: Job<K>): Promise<Outcome<K> | Recorded<K>>;
}

export interface EnqueueOptions<K extends JobName> {
  kind: K;
  payload: JobMap[K];
  runAt?: Date;
  maxAttempts?: number;
  subjectId?: string;
}

export async function enqueue<K extends JobName>(tx: Tx, o: EnqueueOptions<K>): Promise<string> {
  const row = jobRow(o);
  await insertJob(tx, row);
  return row.id;
}

/** The row of a new job: queued, due now unless `o.runAt`, 10 attempts unless `o.maxAttempts`. */
function jobRow<K extends JobName>(o: EnqueueOptions<K>): JobsTable {
  const now = new Date().toISOString();
  return {
    id: newId(),
    kind: o.kind,
    payload: JSON.stringify(o.payload ?? null),
    status: 'queued',
    run_at: (o.runAt ?? new Date()).toISOString(),
    attempts: 0,
    max_attempts: o.maxAttempts ?? 10,
    lease_owner: null,
    lease_expires_at: null,
    last_error: null,
    subject_id: o.subjectId ?? null,
    created_at: now,
    updated_at: now,
  };
}

/**
 * Transactions that queued a job due now, or made queued jobs due now: the router wakes this
 * process's job runners after such a transaction commits (`madeJobsDue`), and only then. A job due
 * later, or one another process queued, is found by the runners' poll (every `pollMs`).
 */
const madeDue = new WeakSet<Tx>();

/** Notes that `tx` queued a job due at `runAt` (an ISO time). */
function noteDue(tx: Tx, runAt: string): void {
  if (runAt <= new Date().toISOString()) madeDue.add(tx);
}

/** Whether `tx` queued a job due now or made queued jobs due now (see `madeDue`). */
export const madeJobsDue = (tx: Tx): boolean => madeDue.has(tx);

function insertJob(tx: Tx, row: JobsTable): Promise<void> {
  noteDue(tx, row.run_at);
  return later(tx, insertRows(tx, 'jobs', [row]));
}

/** Lists of subjects up to this length have a statement of their own (see `subjectsUpdate`); longer ones are built each time. */
const SHAPED_SUBJECTS = 8;

/** An update of the queued jobs (`status`) of `n` subjects (values `subject0`...), of kind `kind` unless `kind` is omitted. */
function subjectsUpdate(db: Tx, n: number, ofKind: boolean, p: { now: string; kind?: JobName }, set: 'cancel' | 'runNow') {
  const q = db
    .updateTable('jobs')
    .set(set === 'cancel' ? { status: 'cancelled', updated_at: p.now } : { run_at: p.now })
    .where('subject_id', 'in', listOf(p, n, 'subject') as string[])
    .where('status', '=', 'queued');
  return ofKind ? q.where('kind', '=', p.kind!) : q;
}

const subjectsShapes = reusableBy((db, [n, ofKind, set]: [number, 'kind' | 'any', 'cancel' | 'runNow'], p: { now: string; kind?: JobName }) =>
  subjectsUpdate(db, n, ofKind === 'kind', p, set),
);

/** Runs `subjectsUpdate` (after the transaction's next statement on PostgreSQL: see `later`). */
async function updateSubjects(tx: Tx, subjectIds: readonly string[], kind: JobName | undefined, set: 'cancel' | 'runNow'): Promise<void> {
  if (!subjectIds.length) return;
  if (set === 'runNow') madeDue.add(tx);
  const values = { now: new Date().toISOString(), kind, ...listValues(subjectIds, 'subject') };
  const n = subjectIds.length;
  await later(tx, n <= SHAPED_SUBJECTS ? subjectsShapes(tx, [n, kind ? 'kind' : 'any', set], values) : subjectsUpdate(tx, n, !!kind, values, set));
}

/** Cancels queued (not running) jobs of a subject (or of several), optionally of one kind. */
export async function cancelJobs(tx: Tx, subjectId: string | readonly string[], kind?: JobName): Promise<void> {
  await updateSubjects(tx, typeof subjectId === 'string' ? [subjectId] : subjectId, kind, 'cancel');
}

/**
 * The job of a new subject that supersedes `from` (say, work superseded before it started): one
 * queued job of `kind` of those subjects is given to the new subject with the new payload and due
 * time, as a fresh job (no attempts, no error), instead of one cancelled and one inserted; their
 * other queued jobs of `kind` are cancelled; and when none of them was queued (e.g. it is running
 * now, and will find its subject superseded) a new job is queued. On PostgreSQL in a transaction
 * the hand-over or insert is one statement sent with `later` (no round trip of its own); SQLite
 * has no data-modifying WITH, so there it reads the hand-over's row count.
 */
export async function supersedeJobs<K extends JobName>(tx: Tx, from: readonly string[], o: EnqueueOptions<K> & { subjectId: string }): Promise<void> {
  // The new job as `enqueue` would insert it; a job handed over takes its values but keeps its id.
  const row = jobRow(o);
  if (!from.length) return void (await insertJob(tx, row));
  noteDue(tx, row.run_at);
  const values = { subjectId: o.subjectId, payload: row.payload, runAt: row.run_at, now: row.updated_at, kind: row.kind };
  // Whether any of `from` may still have a queued job of `kind` once the hand-over is done.
  let left: boolean;
  if (inPostgresTransaction(tx)) {
    const params = [values.subjectId, values.payload, values.runAt, values.now, values.kind, row.id, row.max_attempts, ...from];
    await later(tx, CompiledQuery.raw(handOverOrInsert(from.length), params));
    // Which of the two happened is not known here; with one subject nothing is left either way
    // (when none of its jobs was queued, none is).
    left = from.length > 1;
  } else {
    // One subject (a trigger superseding the one waiting deployment) is the usual case: compiled once.
    const r = await tx.executeQuery(from.length === 1 ? handOverOne(tx, { ...values, from: from[0]! }) : handOverQuery(tx, values, from).compile());
    const handedOver = Number(r.numAffectedRows) > 0;
    if (!handedOver) await insertJob(tx, row);
    left = from.length > (handedOver ? 1 : 0);
  }
  // The job handed over has the new subject now: what is left queued of `from` is cancelled.
  if (left) await cancelJobs(tx, from, o.kind);
}

interface HandOver {
  subjectId: string;
  payload: string;
  runAt: string;
  now: string;
  kind: string;
}

/** The hand-over from `from` (a list of the given length: its shape). */
const handOverQuery = (db: Tx, p: HandOver, from: readonly string[]) =>
  db
    .updateTable('jobs')
    .set({ subject_id: p.subjectId, payload: p.payload, run_at: p.runAt, attempts: 0, last_error: null, updated_at: p.now })
    .where('id', '=', (eb) =>
      eb.selectFrom('jobs').select('id').where('subject_id', 'in', from).where('kind', '=', p.kind).where('status', '=', 'queued').limit(1),
    )
    .where('status', '=', 'queued');

const handOverOne = reusable((db, p: HandOver & { from: string }) => handOverQuery(db, p, [p.from]));

/**
 * PostgreSQL: the hand-over, and the new job's insert when it took no row, as one statement
 * ($1 subject, $2 payload, $3 due time, $4 now, $5 kind, $6 the new job's id, $7 its maximum
 * attempts, then the `n` subjects handed over from).
 */
const handOverOrInsert = (n: number) => `WITH taken AS (
    UPDATE jobs SET subject_id = $1, payload = $2, run_at = $3, attempts = 0, last_error = NULL, updated_at = $4
    WHERE id = (SELECT id FROM jobs WHERE subject_id IN (${Array.from({ length: n }, (_, i) => `$${i + 8}`).join(', ')}) AND kind = $5 AND status = 'queued' LIMIT 1)
      AND status = 'queued'
    RETURNING id)
  INSERT INTO jobs (id, kind, payload, status, run_at, attempts, max_attempts, lease_owner, lease_expires_at, last_error, subject_id, created_at, updated_at)
  SELECT $6, $5, $2, 'queued', $3, 0, CAST($7 AS integer), NULL, NULL, NULL, $1, $4, $4 WHERE NOT EXISTS (SELECT 1 FROM taken)`;

/**
 * Subjects with a job of `kind` queued or running (a durable chain that reschedules itself is one
 * such row at all times, a crashed run included): `subjectId` narrows it to one subject.
 */
export async function pendingSubjects(db: Tx, kind: JobName, subjectId?: string): Promise<Set<string>> {
  let q = db.selectFrom('jobs').select('subject_id').where('kind', '=', kind).where('status', 'in', ['queued', 'running']);
  if (subjectId !== undefined) q = q.where('subject_id', '=', subjectId);
  return new Set((await q.execute()).flatMap((r) => (r.subject_id ? [r.subject_id] : [])));
}

/** Makes the queued jobs of `kind` for these subjects due now (e.g. the deployment waiting behind one that ended). */
export async function runNow(tx: Tx, subjectIds: readonly string[], kind: JobName): Promise<void> {
  await updateSubjects(tx, subjectIds, kind, 'runNow');
}

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

/**
 * A job's completion found the job no longer this worker's (its lease ran out and another worker
 * took it over, or its row is gone): the transaction rolls back, so the job's writes are not
 * committed twice; whoever holds it now runs it.
 */
class LeaseLost extends Error {
  constructor(ids: string) {
    super(`job ${ids} is no longer this worker's (lease taken over); its writes were rolled back`);
  }
}

/** The SQLSTATE `slipway_lease_lost` raises (PostgreSQL; migration 203): LeaseLost, found at COMMIT. */
const LEASE_LOST = 'SW001';
const isLeaseLost = (e: unknown): e is Error => e instanceof LeaseLost || (e as { code?: unknown } | null)?.code === LEASE_LOST;

/** Whether a held update checks its row count in the statement (PostgreSQL) or has it counted after. */
type Check = 'checked' | 'counted';

/** A held update's values: the worker, the ids (for the lease check's message) and how many rows it must change. */
interface HeldValues {
  worker: string;
  ids: string;
  n: number;
  now: string;
}

/**
 * `update` of jobs this worker holds, which must change `n` rows: otherwise a job is no longer
 * this worker's, and the transaction must fail (LeaseLost) and roll back. `checked` (PostgreSQL):
 * the check is part of the statement (`slipway_lease_lost` raises when fewer rows changed), so the
 * statement can go with `later`, with the transaction's COMMIT, instead of a round trip of its own.
 */
function heldUpdate(update: UpdateQueryBuilder<DB, 'jobs', 'jobs', UpdateResult>, checked: Check, p: HeldValues) {
  if (checked === 'counted') return update;
  const changed = update.returning(sql<number>`1`.as('one'));
  return sql`WITH changed AS (${changed}) SELECT slipway_lease_lost(${p.ids}) WHERE (SELECT count(*) FROM changed) <> ${p.n}`;
}

/** `n` jobs done (values `job0`...). Keyed by `n` and whether checked; `n` is at most the jobs that end together (the slots). */
const markDone = reusableBy((db, [n, checked]: [number, Check], p: HeldValues) => {
  const update = db
    .updateTable('jobs')
    .set({ status: 'done', lease_owner: null, lease_expires_at: null, updated_at: p.now })
    .where('id', 'in', listOf(p, n, 'job') as string[])
    .where('lease_owner', '=', p.worker);
  return heldUpdate(update, checked, p);
});

/** A job queued again (attempts reset) at `runAt`, with a new payload when keyed `payload`. */
const requeue = reusableBy((db, [payload, checked]: ['payload' | 'same', Check], p: HeldValues & { runAt: string; payload?: string }) => {
  const update = db
    .updateTable('jobs')
    .set({
      status: 'queued',
      run_at: p.runAt,
      attempts: 0,
      lease_owner: null,
      lease_expires_at: null,
      ...(payload === 'payload' ? { payload: p.payload! } : {}),
      updated_at: p.now,
    })
    .where('id', '=', p.ids)
    .where('lease_owner', '=', p.worker);
  return heldUpdate(update, checked, p);
});

/** Runs a held update (see heldUpdate): `statement` gives it checked or not. */
async function held(tx: Tx, statement: (checked: Check) => CompiledQuery, p: HeldValues): Promise<void> {
  if (inPostgresTransaction(tx)) return void (await later(tx, statement('checked')));
  const r = await tx.executeQuery(statement('counted'));
  if (Number(r.numAffectedRows) !== p.n) throw new LeaseLost(p.ids);
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
    // On SQLite the jobs' writes share the requests' group commits, and fewer of them at once made
    // the API no faster in the bench: there they keep their slots unless told otherwise.
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

  private async execute(row: JobsTable): Promise<void> {
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
        await db.transaction().execute(async (tx) => {
          // Another worker takes a job over only once its lease has run out: a job claimed a
          // moment ago starts without asking (one round trip fewer per job), an older claim checks
          // first. Either way finish() commits nothing unless the job is still this worker's.
          if (!this.freshlyClaimed(row)) {
            const mine = await tx.selectFrom('jobs').select('status').where('id', '=', row.id).where('lease_owner', '=', this.workerId).executeTakeFirst();
            if (!mine || mine.status !== 'running') return;
          }
          await this.finish(tx, [{ row, outcome: await kind.run(tx, job) }]);
        });
      }
    } catch (e) {
      if (isLeaseLost(e)) {
        this.log.warn({ job: row.id, kind: row.kind }, e.message);
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
