// Serializes check-then-write sequences (limits, "one at a time" rules) per key for the rest of
// the current transaction. PostgreSQL: a transaction-scoped advisory lock; SQLite already runs
// one write transaction at a time. Take it before the transaction touches the rows it guards, so
// every writer acquires locks in the same order.
import { sql } from 'kysely';
import type { Tx } from './index.js';
import { later } from './postgres-client.js';
import { reusable } from './reusable.js';
import { isPostgres } from './dialect.js';

const lock = reusable((_db, p: { key: string }) => sql`select pg_advisory_xact_lock(hashtext(${p.key}))`);

/** The keys each open PostgreSQL transaction holds (taken again, a lock is not sent again). */
const held = new WeakMap<Tx, Set<string>>();

export async function lockFor(tx: Tx, key: string): Promise<void> {
  if (!isPostgres(tx)) return;
  if (tx.isTransaction) {
    let keys = held.get(tx);
    if (!keys) held.set(tx, (keys = new Set()));
    if (keys.has(key)) return;
    keys.add(key);
  }
  await later(tx, lock(tx, { key }));
}
