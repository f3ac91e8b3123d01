// The query layer: one Kysely instance over SQLite (default, a WAL file in the data dir)
// or PostgreSQL (DATABASE_URL). Every mutation goes through `db.transaction()`.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Dialect, type Migration, type SqliteDatabase, type Transaction } from 'kysely';
import SQLite from 'better-sqlite3';
import type PG from 'pg';
import { lazy } from '../lazy.js';
import type { DB } from './schema.js';
import { migrationProvider } from './migrations.js';
import { setContentVersion } from './content-version.js';
import { wrappedPool } from './postgres-client.js';
import { FALLBACK_AUTOCHECKPOINT_PAGES, startCheckpointer } from './checkpointer.js';
import { checkedDialect, checkingPurity } from '../purity.js';
import { GroupCommitSqliteDialect, type GroupCommitOptions } from './group-commit.js';
import { runAfterCommit } from './after-commit.js';

export { later, together } from './postgres-client.js';

export type Db = Kysely<DB>;
export type Tx = Transaction<DB> | Kysely<DB>;
export type DbKind = 'sqlite' | 'postgres';

const loadPg = lazy<typeof PG>('pg');
let configured = false;

/** The PostgreSQL client library, loaded on first use (a SQLite start never loads it). */
export function pgDriver(): typeof PG {
  const pg = loadPg();
  // Return BIGINT (int8) as a JS number: our bigints are epoch seconds and counters.
  if (!configured) pg.types.setTypeParser(20, (v) => Number(v));
  configured = true;
  return pg;
}

export interface Database {
  db: Db;
  kind: DbKind;
  /**
   * SQLite: the file itself, for a read that must not wait behind a transaction (it sees that
   * transaction's uncommitted changes: only for values where that is harmless).
   */
  file?: SQLite.Database;
  /** PostgreSQL: the pool's connection counts (metrics). */
  pool?: { readonly totalCount: number; readonly idleCount: number; readonly waitingCount: number };
  close(): Promise<void>;
}

/** The dialect, with each statement checked against the `pure` flag when that check is on (purity.ts). */
const checked = (d: Dialect): Dialect => (checkingPurity ? checkedDialect(d) : d);

/**
 * Startup options of every PostgreSQL connection: prepared statements use their generic plan from
 * the first execution on (`plan_cache_mode`). Every statement is prepared once per connection
 * (postgres-client.ts), and by default PostgreSQL plans a statement anew for each execution
 * whenever it guesses that a plan for the given values beats the generic one (as it does for
 * reads over the `(app_id, status)` index of deployments), paying for a plan at every execution.
 * Slipway's statements are index lookups whose best plan does not depend on the values.
 * `PGOPTIONS` is added after it (a later `-c` wins); options in DATABASE_URL replace both (pg).
 */
export function connectionOptions(env: NodeJS.ProcessEnv = process.env): string {
  return ['-c plan_cache_mode=force_generic_plan', env.PGOPTIONS].filter(Boolean).join(' ');
}

/**
 * `groupCommit`: SQLite transactions committed in groups (group-commit.ts; on unless `false`; its
 * options, for tests that must not depend on how fast the machine is, instead of `true`).
 */
export function openDatabase(opts: { databaseUrl?: string; dataDir: string; groupCommit?: boolean | GroupCommitOptions }): Database {
  if (opts.databaseUrl) {
    const pool = new (pgDriver().Pool)({ connectionString: opts.databaseUrl, max: 10, options: connectionOptions() });
    // An idle connection that the server closes (restart, admin termination) must not crash the
    // process; the pool replaces it on the next query.
    pool.on('error', () => {});
    const db = runAfterCommit(new Kysely<DB>({ dialect: checked(new PostgresDialect({ pool: wrappedPool(pool, pgDriver()) })) }));
    return { db, kind: 'postgres', pool, close: () => db.destroy() };
  }
  mkdirSync(opts.dataDir, { recursive: true });
  const file = new SQLite(join(opts.dataDir, 'slipway.db'));
  file.pragma('journal_mode = WAL');
  file.pragma('synchronous = NORMAL');
  file.pragma('busy_timeout = 5000');
  file.pragma('foreign_keys = ON');
  // Savepoint journals (every grouped transaction is a savepoint, see group-commit.ts) stay in
  // memory: past 64 KiB SQLite would spill them to a temporary file, a pwrite per page written.
  file.pragma('temp_store = MEMORY');
  // A page cache of up to 8 MB, not the driver's default 16 MB: the lists' hot pages fit, the
  // rest is a read from the operating system's file cache, and the server's RSS stays within its
  // target however many resources are stored.
  file.pragma('cache_size = -8000');
  // Checkpoints run in a worker thread (see checkpointer.ts), started by this connection's first
  // write (an open that never writes, or a start up to its first write, spawns no thread); the
  // automatic checkpoint here only bounds the WAL.
  file.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  let checkpointer: ReturnType<typeof startCheckpointer> | undefined;
  let writes = 0;
  const changed = () => {
    writes++;
    checkpointer ??= startCheckpointer(file.name, (m) => process.emitWarning(`SQLite WAL checkpoint failed: ${m}`));
  };
  const dataVersion = file.prepare('PRAGMA data_version').pluck();
  const statements = cachingStatements(file, changed);
  const grouped = opts.groupCommit ?? true;
  const dialect = grouped
    ? new GroupCommitSqliteDialect(statements, () => file.inTransaction, grouped === true ? {} : grouped)
    : new SqliteDialect({ database: statements });
  const db = runAfterCommit(new Kysely<DB>({ dialect: checked(dialect) }));
  const version = (other: number) => `${writes}:${other}`;
  // Other processes' commits, read once for the callers of a turn (contentVersionOfTurn). The
  // Coalescer's gather mode does the same, but its queue and promise hops are a cost on this hot
  // path, so the turn's read is one shared promise here.
  let turn: Promise<number> | undefined;
  const ofTurn = () =>
    (turn ??= new Promise<number>((resolve, reject) =>
      setImmediate(() => {
        turn = undefined;
        try {
          resolve(dataVersion.get() as number);
        } catch (e) {
          reject(e);
        }
      }),
    ));
  setContentVersion(
    db,
    () => version(dataVersion.get() as number),
    async () => version(await ofTurn()),
  );
  const close = async () => {
    await checkpointer?.close();
    await db.destroy();
  };
  return { db, kind: 'sqlite', file, close };
}

/**
 * The SQLite file with prepared statements kept per SQL text: Kysely prepares every query anew,
 * and preparing is a large part of a read's cost. A statement still iterating (a
 * streamed query) is busy, so that text gets a fresh one. Rows are read as arrays and made into
 * objects by a function compiled once per statement (better-sqlite3 builds each row object key by
 * key, a large part of a page's cost); the objects are the same.
 */
function cachingStatements(file: SQLite.Database, changed: () => void, max = 512): SqliteDatabase {
  const statements = new Map<string, ReturnType<typeof rowsAsObjects>>();
  const prepare = (source: string) => {
    let stmt = statements.get(source);
    if (stmt && !stmt.busy) return stmt;
    stmt = rowsAsObjects(file.prepare(source), changed);
    if (statements.size >= max) statements.delete(statements.keys().next().value!);
    statements.set(source, stmt);
    return stmt;
  };
  return { prepare, close: () => void file.close() };
}

/** A reading statement whose rows come as arrays, turned into objects by one compiled function. */
function rowsAsObjects(stmt: SQLite.Statement, changed: () => void) {
  if (!stmt.reader) {
    // A rollback changes content back: a version read inside the transaction must not stay
    // current (sqlite3_changes() still reports the last write then, so it is counted outright).
    const rollback = /^\s*rollback\b/i.test(stmt.source);
    if (stmt.readonly && !rollback) return stmt;
    return {
      reader: false,
      get busy() {
        return stmt.busy;
      },
      run(params: readonly unknown[]) {
        const r = stmt.run(params);
        if (r.changes > 0 || rollback) changed();
        return r;
      },
      all: (params: readonly unknown[]) => stmt.all(params),
      iterate: (params: readonly unknown[]) => stmt.iterate(params),
    };
  }
  if (!stmt.readonly) {
    // INSERT/UPDATE/DELETE ... RETURNING: a write when it returns rows (the rows it changed).
    const all = stmt.all.bind(stmt);
    stmt.all = ((params: readonly unknown[]) => {
      const rows = all(params);
      if (rows.length) changed();
      return rows;
    }) as typeof stmt.all;
  }
  const names = stmt.columns().map((c) => c.name);
  // Later columns of the same name win, as in better-sqlite3's own objects.
  const row = new Function('r', `return {${names.map((n, i) => `${JSON.stringify(n)}: r[${i}]`).join(', ')}};`) as (r: unknown[]) => unknown;
  stmt.raw(true);
  return {
    reader: true,
    get busy() {
      return stmt.busy;
    },
    all: (params: readonly unknown[]) => (stmt.all(params) as unknown[][]).map(row),
    run: (params: readonly unknown[]) => stmt.run(params),
    *iterate(params: readonly unknown[]) {
      for (const r of stmt.iterate(params) as IterableIterator<unknown[]>) yield row(r);
    },
  };
}

export async function migrate(db: Db, extra: Record<string, Migration> = {}): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider(extra) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? error}`);
  }
}

/** Tables in dependency order (children first), for `reset`. */
export const ALL_TABLES = [
  'edge_requests',
  'runtime_logs',
  'sim_faults',
  'sim_progression',
  'jobs',
  'project_services',
  'projects',
  'device_codes',
  'api_keys',
  'users',
  'idempotency_keys',
  'rate_windows',
  'settings',
  'companies',
] as const;

export const nowIso = () => new Date().toISOString();
