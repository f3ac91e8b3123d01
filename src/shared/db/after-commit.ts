// Work that must see a transaction's writes committed (telling the edge that what it serves
// changed, so it reads the new state): registered on the transaction, run by whoever committed it
// — the router after a request's transaction, the job engine after a job's — and dropped with a
// transaction that rolled back. Outside a transaction the work runs at once (nothing to wait for).
import type { Kysely } from 'kysely';

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
