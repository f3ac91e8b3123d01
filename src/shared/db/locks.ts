// Serializes check-then-write sequences (limits, "one at a time" rules) per key for the rest of
// the current transaction. PostgreSQL: a transaction-scoped advisory lock; SQLite already runs
// one write transaction at a time. Take it before the transaction touches the rows it guards, so
// every writer acquires locks in the same order. A shared hold lets its holders run together and
// keeps out an exclusive one (writers that may run side by side, against one that removes what
// they write).
import { sql } from 'kysely';
import type { Tx } from './index.js';
import { later } from './postgres-client.js';
import { reusable } from './reusable.js';
import { isPostgres } from './dialect.js';

const lock = reusable((_db, p: { key: string }) => sql`select pg_advisory_xact_lock(hashtext(${p.key}))`);
const lockShared = reusable((_db, p: { key: string }) => sql`select pg_advisory_xact_lock_shared(hashtext(${p.key}))`);

/** The keys each open PostgreSQL transaction holds (taken again, a lock is not sent again). */
const held = new WeakMap<Tx, Set<string>>();

export async function lockFor(tx: Tx, key: string, mode: 'exclusive' | 'shared' = 'exclusive'): Promise<void> {
  if (!isPostgres(tx)) return;
  if (tx.isTransaction) {
    let keys = held.get(tx);
    if (!keys) held.set(tx, (keys = new Set()));
    const name = mode === 'shared' ? `shared ${key}` : key;
    if (keys.has(name)) return;
    keys.add(name);
  }
  await later(tx, (mode === 'shared' ? lockShared : lock)(tx, { key }));
}
