// The query layer: one Kysely instance over SQLite (default, a WAL file in the data dir)
// or PostgreSQL (DATABASE_URL). Every mutation goes through `db.transaction()`.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Migration, type SqliteDatabase, type Transaction } from 'kysely';
import SQLite from 'better-sqlite3';
import type PG from 'pg';
import { lazy } from '../lazy.js';
import type { DB } from './schema.js';
import { migrationProvider } from './migrations.js';

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
  close(): Promise<void>;
}

export function openDatabase(opts: { databaseUrl?: string; dataDir: string }): Database {
  if (opts.databaseUrl) {
    const pool = new (pgDriver().Pool)({ connectionString: opts.databaseUrl, max: 10 });
    // An idle connection that the server closes (restart, admin termination) must not crash the
    // process; the pool replaces it on the next query.
    pool.on('error', () => {});
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    return { db, kind: 'postgres', close: () => db.destroy() };
  }
  mkdirSync(opts.dataDir, { recursive: true });
  const file = new SQLite(join(opts.dataDir, 'slipway.db'));
  file.pragma('journal_mode = WAL');
  file.pragma('synchronous = NORMAL');
  file.pragma('busy_timeout = 5000');
  file.pragma('foreign_keys = ON');
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: cachingStatements(file) }) });
  return { db, kind: 'sqlite', close: () => db.destroy() };
}

/**
 * The SQLite file with prepared statements kept per SQL text: Kysely prepares every query anew,
 * and preparing was a fifth of a read's CPU time (profiled). A statement still iterating (a
 * streamed query) is busy, so that text gets a fresh one.
 */
function cachingStatements(file: SQLite.Database, max = 512): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>();
  const prepare = (source: string) => {
    let stmt = statements.get(source);
    if (stmt && !stmt.busy) return stmt;
    stmt = file.prepare(source);
    if (statements.size >= max) statements.delete(statements.keys().next().value!);
    statements.set(source, stmt);
    return stmt;
  };
  return { prepare, close: () => void file.close() };
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
