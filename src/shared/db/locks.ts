// Serializes check-then-write sequences (limits, "one at a time" rules) per key for the rest of
// the current transaction. PostgreSQL: a transaction-scoped advisory lock; SQLite already runs
// one write transaction at a time. Take it before the transaction touches the rows it guards, so
// every writer acquires locks in the same order.
import { sql } from 'kysely';
import type { Tx } from './index.js';
import { later } from './postgres-client.js';
import { isPostgres } from './dialect.js';

export async function lockFor(tx: Tx, key: string): Promise<void> {
  if (isPostgres(tx)) await later(tx, sql`select pg_advisory_xact_lock(hashtext(${key}))`);
}
