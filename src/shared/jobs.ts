// The durable job engine's public face. Background work (deployments, restarts, restores, backups,
// cron runs, webhook deliveries) is a row in `jobs`, inserted in the same transaction as the state
// change that caused it; this file holds the job kinds' types (JobMap, filled by the modules) and
// what services call on that transaction: enqueue, cancel, make due now, hand a queued job over to
// a new subject. They write only queued jobs, never one a worker holds. The engine that claims and
// runs jobs is job-engine.ts (re-exported here); the checks on a job's lease, job-leases.ts.
import { CompiledQuery } from 'kysely';
import type { Tx } from './db/index.js';
import type { JobsTable } from './db/schema.js';
import { newId } from './ids.js';
import { later } from './db/postgres-client.js';
import { insertRows, listOf, listValues, reusable, reusableBy } from './db/reusable.js';
import { inPostgresTransaction } from './db/dialect.js';
import { assertNotPure } from './purity.js';
import { activeTraceparent } from './observability/trace.js';

export { backoffMs, JobEngine, type JobEngineOptions } from './job-engine.js';

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
  assertNotPure(`enqueued a ${o.kind} job`);
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
    traceparent: activeTraceparent(),
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
  const values = { subjectId: o.subjectId, payload: row.payload, runAt: row.run_at, now: row.updated_at, kind: row.kind, traceparent: row.traceparent };
  // Whether any of `from` may still have a queued job of `kind` once the hand-over is done.
  let left: boolean;
  if (inPostgresTransaction(tx)) {
    const params = [values.subjectId, values.payload, values.runAt, values.now, values.kind, row.id, row.max_attempts, row.traceparent, ...from];
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
  traceparent: string | null;
}

/** The hand-over from `from` (a list of the given length: its shape). */
const handOverQuery = (db: Tx, p: HandOver, from: readonly string[]) =>
  db
    .updateTable('jobs')
    .set({ subject_id: p.subjectId, payload: p.payload, run_at: p.runAt, attempts: 0, last_error: null, traceparent: p.traceparent, updated_at: p.now })
    .where('id', '=', (eb) =>
      eb.selectFrom('jobs').select('id').where('subject_id', 'in', from).where('kind', '=', p.kind).where('status', '=', 'queued').limit(1),
    )
    .where('status', '=', 'queued');

const handOverOne = reusable((db, p: HandOver & { from: string }) => handOverQuery(db, p, [p.from]));

/**
 * PostgreSQL: the hand-over, and the new job's insert when it took no row, as one statement
 * ($1 subject, $2 payload, $3 due time, $4 now, $5 kind, $6 the new job's id, $7 its maximum
 * attempts, $8 its traceparent, then the `n` subjects handed over from).
 */
const handOverOrInsert = (n: number) => `WITH taken AS (
    UPDATE jobs SET subject_id = $1, payload = $2, run_at = $3, attempts = 0, last_error = NULL, traceparent = $8, updated_at = $4
    WHERE id = (SELECT id FROM jobs WHERE subject_id IN (${Array.from({ length: n }, (_, i) => `$${i + 9}`).join(', ')}) AND kind = $5 AND status = 'queued' LIMIT 1)
      AND status = 'queued'
    RETURNING id)
  INSERT INTO jobs (id, kind, payload, status, run_at, attempts, max_attempts, lease_owner, lease_expires_at, last_error, subject_id, traceparent, created_at, updated_at)
  SELECT $6, $5, $2, 'queued', $3, 0, CAST($7 AS integer), NULL, NULL, NULL, $1, $8, $4, $4 WHERE NOT EXISTS (SELECT 1 FROM taken)`;

/**
 * Subjects with a job of `kind` queued or running (a durable chain that reschedules itself is one
 * such row at all times, a crashed run included): `subjectId` narrows it to one subject.
 */
export async function pendingSubjects(db: Tx, kind: JobName, subjectId?: string): Promise<Set<string>> {
  let q = db.selectFrom('jobs').select('subject_id').where('kind', '=', kind).where('status', 'in', ['queued', 'running']);
  if (subjectId !== undefined) q = q.where('subject_id', '=', subjectId);
  return new Set((await q.execute()).flatMap((r) => (r.subject_id ? [r.subject_id] : [])));
}

/**
 * The jobs due and not claimed yet (`queued`), and the running ones, per kind: how many, and the
 * due time of the oldest (metrics, read when scraped; the claim index finds them).
 */
export async function jobQueue(db: Tx, now: Date): Promise<{ kind: string; status: 'queued' | 'running'; count: number; oldest: string }[]> {
  const rows = await db
    .selectFrom('jobs')
    .select(['kind', 'status', (eb) => eb.fn.countAll().as('n'), (eb) => eb.fn.min('run_at').as('oldest')])
    .where((eb) => eb.or([eb('status', '=', 'running'), eb.and([eb('status', '=', 'queued'), eb('run_at', '<=', now.toISOString())])]))
    .groupBy(['kind', 'status'])
    .execute();
  return rows.map((r) => ({ kind: r.kind, status: r.status as 'queued' | 'running', count: Number(r.n), oldest: String(r.oldest) }));
}

/** Makes the queued jobs of `kind` for these subjects due now (e.g. the deployment waiting behind one that ended). */
export async function runNow(tx: Tx, subjectIds: readonly string[], kind: JobName): Promise<void> {
  await updateSubjects(tx, subjectIds, kind, 'runNow');
}
