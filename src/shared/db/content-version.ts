// The content version of a database handle (SQLite): kept apart from db/index.ts, which imports
// the migrations, so that readers such as pagination.ts need not import the query layer itself.
import type { Tx } from './index.js';

const versions = new WeakMap<object, () => string>();

/** Registers how `db`'s content version is read (db/index.ts, when it opens a SQLite file). */
export function setContentVersion(db: object, read: () => string): void {
  versions.set(db, read);
}

/**
 * SQLite, outside a transaction: a value that changes whenever the database's content may have
 * changed since it was last read, through a statement of this process that changed rows (counted
 * as it runs, so a transaction still open counts too) or a commit by another process (`PRAGMA
 * data_version`). For caches of query results; undefined where there is none (PostgreSQL, `tx`
 * inside a transaction).
 */
export function contentVersion(db: Tx): string | undefined {
  return versions.get(db)?.();
}
