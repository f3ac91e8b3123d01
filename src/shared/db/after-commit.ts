// Work that must see a transaction's writes committed (telling the edge that what it serves
// changed, so it reads the new state): registered on the transaction, run once it committed —
// by every `db.transaction().execute(...)` of the database (`runAfterCommit`, installed where the
// database is opened: a request's, a job's, a job's completion or failure, a phase step on a read,
// a registration at start), before that call resolves — and dropped with a transaction that rolled
// back. Outside a transaction the work runs at once (nothing to wait for).
import type { Kysely, TransactionBuilder } from 'kysely';

type Work = () => unknown;
const pending = new WeakMap<object, Work[]>();

/** Runs `fn` once `tx` committed (at once when `tx` is not a transaction). */
export function afterCommit(tx: Kysely<never> | { isTransaction: boolean }, fn: Work): void {
  if (!tx.isTransaction) return void Promise.resolve().then(fn);
  const list = pending.get(tx);
  if (list) list.push(fn);
  else pending.set(tx, [fn]);
}

/** Runs (and forgets) what was registered on `tx`, now that it committed; failures are the work's own business. */
export async function committed(tx: object): Promise<void> {
  const list = pending.get(tx);
  if (!list) return;
  pending.delete(tx);
  await Promise.all(list.map(async (fn) => fn()));
}

/**
 * Makes every transaction of `db` run its after-commit work once it committed, before
 * `execute` resolves (so whoever committed waits for it, as the router and the job engine did
 * before; their own `committed` calls then find nothing left). Without it, work registered in a
 * transaction nobody called `committed` for was silently dropped (a hostname removed in such a
 * transaction stayed served by nginx until its next periodic resync).
 */
export function runAfterCommit<D>(db: Kysely<D>): Kysely<D> {
  const begin = db.transaction.bind(db);
  db.transaction = () => committing(begin());
  return db;
}

function committing<D>(builder: TransactionBuilder<D>): TransactionBuilder<D> {
  return new Proxy(builder, {
    get(target, prop) {
      if (prop === 'execute')
        return async <T>(fn: (tx: never) => Promise<T>): Promise<T> => {
          let tx: object | null = null;
          const result = await target.execute((t) => ((tx = t), fn(t as never)));
          if (tx) await committed(tx);
          return result;
        };
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      // Builders made from this one (an isolation level, an access mode) commit the same way.
      return (...args: unknown[]) => {
        const r = (v as (...a: unknown[]) => unknown).apply(target, args);
        return r && typeof r === 'object' && 'execute' in r ? committing(r as TransactionBuilder<D>) : r;
      };
    },
  });
}
