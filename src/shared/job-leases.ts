// A job's lease as its completion checks it: the updates that complete or requeue jobs a worker
// holds must change exactly the rows of those jobs; fewer means a job was taken over (its lease ran
// out) or is gone, and the transaction fails (LeaseLost) and rolls back, so a job's writes are never
// committed twice. On PostgreSQL the check is part of the statement, which then rides with the
// transaction's COMMIT; on SQLite the row count is read.
import { sql, type CompiledQuery, type UpdateQueryBuilder, type UpdateResult } from 'kysely';
import type { Tx } from './db/index.js';
import type { DB } from './db/schema.js';
import { later } from './db/postgres-client.js';
import { listOf, reusableBy } from './db/reusable.js';
import { inPostgresTransaction } from './db/dialect.js';

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
export const isLeaseLost = (e: unknown): e is Error => e instanceof LeaseLost || (e as { code?: unknown } | null)?.code === LEASE_LOST;

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
export const markDone = reusableBy((db, [n, checked]: [number, Check], p: HeldValues) => {
  const update = db
    .updateTable('jobs')
    .set({ status: 'done', lease_owner: null, lease_expires_at: null, updated_at: p.now })
    .where('id', 'in', listOf(p, n, 'job') as string[])
    .where('lease_owner', '=', p.worker);
  return heldUpdate(update, checked, p);
});

/** A job queued again (attempts reset) at `runAt`, with a new payload when keyed `payload`. */
export const requeue = reusableBy((db, [payload, checked]: ['payload' | 'same', Check], p: HeldValues & { runAt: string; payload?: string }) => {
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
export async function held(tx: Tx, statement: (checked: Check) => CompiledQuery, p: HeldValues): Promise<void> {
  if (inPostgresTransaction(tx)) return void (await later(tx, statement('checked')));
  const r = await tx.executeQuery(statement('counted'));
  if (Number(r.numAffectedRows) !== p.n) throw new LeaseLost(p.ids);
}
