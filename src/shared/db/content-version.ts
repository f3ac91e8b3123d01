// The content version of a database handle (SQLite): kept apart from db/index.ts, which imports
// the migrations, so that readers such as pagination.ts need not import the query layer itself.
import type { Tx } from './index.js';

interface Reader {
  now: () => string;
  ofTurn: () => Promise<string>;
}

const versions = new WeakMap<object, Reader>();

/**
 * Registers how `db`'s content version is read (db/index.ts, when it opens a SQLite file): `now`
 * at once, `ofTurn` shared by the callers of one turn of the event loop (see contentVersionOfTurn).
 */
export function setContentVersion(db: object, now: () => string, ofTurn: () => Promise<string>): void {
  versions.set(db, { now, ofTurn });
}

/**
 * SQLite, outside a transaction: a value that changes whenever the database's content may have
 * changed since it was last read, through a statement of this process that changed rows (counted
 * as it runs, so a transaction still open counts too) or a commit by another process (`PRAGMA
 * data_version`). For caches of query results; undefined where there is none (PostgreSQL, `tx`
 * inside a transaction).
 */
export function contentVersion(db: Tx): string | undefined {
  return versions.get(db)?.now();
}

/**
 * contentVersion for the requests of one turn: the callers of a turn wait for its end
 * (setImmediate) and share one read of the other processes' commits, made after every one of
 * them arrived, so it still sees every commit made before any of them did; this process's own
 * writes are counted when each caller resumes. Undefined where there is no content version.
 */
export function contentVersionOfTurn(db: Tx): Promise<string> | undefined {
  return versions.get(db)?.ofTurn();
}
