// PostgreSQL: the tables whose rows are rewritten or deleted at the rate of requests, vacuumed by
// every server process every CHURN_VACUUM_MS. Each update of such a row (a job claimed, handed
// over, finished; a rate window counted) leaves the old version and index entries behind until a
// vacuum, and every later lookup through those indexes walks them. Autovacuum, where it is on,
// visits a table at most once a minute, and it may be off. Every table here holds few live rows (pending jobs, open windows, a count per list), so a
// vacuum of them is short; SKIP_LOCKED: one that another process is running is not waited for;
// TRUNCATE false: a vacuum that gives empty trailing pages back to the operating system holds
// the table's exclusive lock meanwhile, and the job claims and rate-limit counts would queue on
// it (a churning table reuses those pages soon anyway).
// Tables that keep history (deployments, events, logs) are left to autovacuum: a vacuum of
// theirs walks indexes that grow with the history. The same process analyzes the tables whose
// statistics are stale (`analyzeStale`): after each vacuum, and every GROWTH_CHECK_MS those that
// doubled in size.
import { sql, type Kysely } from 'kysely';

/** How often each server process vacuums CHURNING_TABLES (PostgreSQL). */
export const CHURN_VACUUM_MS = 5_000;

/**
 * How often each server process looks for tables that grew to twice their analyzed size
 * (PostgreSQL; see analyzeStale): one read of the statistics views and the tables' sizes.
 */
export const GROWTH_CHECK_MS = 1_000;

/**
 * The tables vacuumed:
 * - `jobs` (src/shared/jobs.ts): every claim, hand-over and completion rewrites a row, and the
 *   next job statements walk the dead versions through the subject and status indexes.
 * - `rate_windows` (src/shared/ratelimit.ts): a row per rate-limit bucket, rewritten by every
 *   request counted on PostgreSQL.
 * - `list_count_deltas` and `list_counts` (src/shared/pagination.ts): every fold deletes deltas,
 *   and a page's count subquery walks the index entries of all the deltas ever deleted, not only
 *   of the few live ones.
 */
export const CHURNING_TABLES = ['jobs', 'rate_windows', 'list_count_deltas', 'list_counts'] as const;

/** Vacuums CHURNING_TABLES (PostgreSQL; SQLite reuses deleted rows' space without one). */
async function vacuumChurning(db: Kysely<any>): Promise<void> {
  await sql`VACUUM (SKIP_LOCKED, TRUNCATE false) ${sql.raw(CHURNING_TABLES.join(', '))}`.execute(db);
}

/**
 * PostgreSQL: `vacuumChurning` then `analyzeStale` every CHURN_VACUUM_MS, and `analyzeStale` of the
 * grown tables only every GROWTH_CHECK_MS, on timers that do not keep the process alive, each
 * skipped while its last run is still going; `failed` hears of a run that failed. Returns the
 * function that stops both.
 */
export function startMaintenance(db: Kysely<any>, failed: (what: string, e: Error) => void): () => void {
  const every = (ms: number, what: string, run: (db: Kysely<any>) => Promise<void>) => {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      run(db)
        .catch((e: Error) => failed(what, e))
        .finally(() => (running = false));
    }, ms);
    timer.unref();
    return timer;
  };
  const timers = [
    every(CHURN_VACUUM_MS, 'vacuum of the churning tables', async (db) => {
      await vacuumChurning(db);
      await analyzeStale(db, true);
    }),
    every(GROWTH_CHECK_MS, 'analysis of grown tables', (db) => analyzeStale(db, false)),
  ];
  return () => timers.forEach(clearInterval);
}

/**
 * Analyzes the tables of the current schema whose statistics are stale:
 * - those that hold rows and were never analyzed;
 * - those that have grown to twice the pages they had when last analyzed (vacuumed), and 4 more;
 * - with `modified`: those where more rows changed since their last analysis than autovacuum's
 *   threshold allows (`autovacuum_analyze_threshold` plus `autovacuum_analyze_scale_factor` of the
 *   rows counted then: 50 and 10% by default), autovacuum's own rule, here checked every
 *   CHURN_VACUUM_MS instead of once a minute, and also where autovacuum is off.
 * Why it matters: every statement runs with its generic plan (`plan_cache_mode`, see
 * connectionOptions), made at its first execution on a connection from the statistics and size of
 * that moment and kept until the table's statistics change: a plan made while a table was a page
 * or two stays one for a page or two as the table grows. Without these analyses a read
 * by primary key can walk a secondary index (an application read by `id` and `company_id` through
 * the index on the company), and reads of a deployment scan the whole deployments table, ever
 * longer as it grows.
 * An ANALYZE gives the table statistics for its size, and the cached plans that read it are made
 * again. Growth is looked for every GROWTH_CHECK_MS (a table growing from empty is analyzed at
 * about 6, 16, 36, 76 ... pages: a few times in all), so plans made for a table still small are
 * made again soon after it grows. The modification rule is checked only with the vacuum: checked
 * every GROWTH_CHECK_MS, a table taking rows at that rate would be analyzed, and every plan that
 * reads it made again, at each check. SKIP_LOCKED: a table another
 * process is analyzing (or vacuuming) is left to it.
 */
async function analyzeStale(db: Kysely<any>, modified: boolean): Promise<void> {
  const stale = await sql<{ relname: string }>`SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
    WHERE s.schemaname = current_schema() AND (
      (s.last_analyze IS NULL AND s.last_autoanalyze IS NULL AND s.n_live_tup > 0)
      OR pg_relation_size(s.relid) >= (2 * c.relpages + 4)::bigint * current_setting('block_size')::bigint
      OR (${modified} AND s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
          + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0)))`.execute(db);
  if (stale.rows.length) await sql`ANALYZE (SKIP_LOCKED) ${sql.join(stale.rows.map((r) => sql.table(r.relname)))}`.execute(db);
}
