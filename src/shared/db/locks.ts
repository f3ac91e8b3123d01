// Serializes check-then-write sequences (limits, "one at a time" rules) per key for the rest of
// the current transaction. PostgreSQL: a transaction-scoped advisory lock; SQLite already runs
// one write transaction at a time.
import { sql } from 'kysely';
import type { DbKind, Tx } from './index.js';

export async function lockFor(tx: Tx, kind: DbKind, key: string): Promise<void> {
  if (kind === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${key}))`.execute(tx);
}
