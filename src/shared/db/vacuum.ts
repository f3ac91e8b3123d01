// PostgreSQL: the tables whose rows are rewritten or deleted at the rate of requests, vacuumed by
// every server process every CHURN_VACUUM_MS. Each update of such a row (a job claimed, handed
// over, finished; a rate window counted) leaves the old version and index entries behind until a
// vacuum, and every later lookup through those indexes walks them. Autovacuum, where it is on,
// visits a table at most once a minute, and it may be off (as on the machine the benchmark runs
// on). Every table here holds few live rows (pending jobs, open windows, a count per list), so a
// vacuum of them is short; SKIP_LOCKED: one that another process is running is not waited for;
// TRUNCATE false: a vacuum that gives empty trailing pages back to the operating system holds
// the table's exclusive lock meanwhile, and the job claims and rate-limit counts would queue on
// it (a churning table reuses those pages soon anyway).
// Tables that keep history (deployments, events, logs) are left to autovacuum: a vacuum of
// theirs walks indexes that grow with the history. The same tick analyzes the tables whose
// statistics are stale by autovacuum's own rule (`analyzeStale`).
import { sql, type Kysely } from 'kysely';
import { isPostgres } from './dialect.js';

/** How often each server process vacuums CHURNING_TABLES (PostgreSQL). */
export const CHURN_VACUUM_MS = 5_000;

/**
 * The tables vacuumed, and what was measured without it:
 * - `jobs` (src/shared/jobs.ts): in a run of 6,000 deployment triggers, the hand-over of a
 *   superseded deployment's job read 95 buffers a statement, the subject's job updates 108 and
 *   116; 26, 18 and 26 with the vacuum (pg_stat_statements), and PostgreSQL's CPU per trigger went
 *   from 1.68 to 1.43 ms.
 * - `rate_windows` (src/shared/ratelimit.ts): a row per rate-limit bucket, rewritten by every
 *   request counted on PostgreSQL.
 * - `list_count_deltas` and `list_counts` (src/shared/pagination.ts): every fold deletes deltas;
 *   after 20,000 creates, a page's count subquery walked 20,050 index entries for its 2 live
 *   deltas, 1.2 to 1.5 ms a page on every list read, where a vacuumed index costs it well under
 *   0.1 ms.
 */
export const CHURNING_TABLES = ['jobs', 'rate_windows', 'list_count_deltas', 'list_counts'] as const;

/** Vacuums CHURNING_TABLES, then `analyzeStale`, on PostgreSQL; nothing on SQLite (deleted rows' space is reused there without one). */
export async function vacuumChurning(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`VACUUM (SKIP_LOCKED, TRUNCATE false) ${sql.raw(CHURNING_TABLES.join(', '))}`.execute(db);
  await analyzeStale(db);
}

/**
 * Analyzes the tables of the current schema whose statistics are stale: those that hold rows and
 * were never analyzed, and those where more rows changed since their last analysis than
 * autovacuum's threshold allows (`autovacuum_analyze_threshold` plus
 * `autovacuum_analyze_scale_factor` of the rows counted then: 50 and 10% by default), the rule
 * autovacuum applies, checked here at every tick instead of once a minute, and also when
 * autovacuum is off. Why it matters: every statement runs with its generic plan
 * (`plan_cache_mode`, see connectionOptions), made at its first execution on a connection from
 * the statistics of that moment and kept until the table's statistics change. A table analyzed
 * while empty, or not at all, is planned as one page:
 * - a deployment trigger's read of its application (`id` and `company_id` given) walked all 50
 *   applications of the company through their index on the company, 40 buffers where the primary
 *   key takes 2;
 * - reads of a deployment by id and the trigger's read of the application with its active
 *   deployments scanned the whole deployments table (benchmark: 49 buffers a trigger in the first
 *   1,000 triggers, 200 to 570 in the next 3,000, PostgreSQL's CPU a trigger rising from 1.0 to
 *   3.3 ms as the table grew).
 * An ANALYZE gives the table statistics for its size, and the cached plans that read it are made
 * again. SKIP_LOCKED: a table another process is analyzing (or vacuuming) is left to it.
 */
async function analyzeStale(db: Kysely<any>): Promise<void> {
  const stale = await sql<{ relname: string }>`SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
    WHERE s.schemaname = current_schema() AND (
      (s.last_analyze IS NULL AND s.last_autoanalyze IS NULL AND s.n_live_tup > 0)
      OR s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
        + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0))`.execute(db);
  if (stale.rows.length) await sql`ANALYZE (SKIP_LOCKED) ${sql.join(stale.rows.map((r) => sql.table(r.relname)))}`.execute(db);
}
