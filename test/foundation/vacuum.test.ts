// PostgreSQL: every server process vacuums the tables whose rows churn at the rate of requests
// (src/shared/db/vacuum.ts) every CHURN_VACUUM_MS, so that lookups through their indexes walk
// live entries only, with autovacuum off (as on the machines these tests run on) or too slow.
// Measured as the entries a bitmap index scan walks (live ones, and dead ones until a vacuum)
// against the live rows, once the churn is over. The same tick analyzes the tables whose
// statistics are stale (never analyzed, or more rows changed since than autovacuum's threshold):
// measured as the row count the planner is given and the index a lookup's plan takes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { plannedIndexes } from '../helpers/util.js';
import { CHURN_VACUUM_MS } from '../../src/shared/db/vacuum.js';
import { createApp, trigger } from '../applications/support.js';

/**
 * The index entries a bitmap scan of `table` where `where` walks, and the rows it finds live
 * (plain index and sequential scans are off: the plan must scan one index into a bitmap).
 */
async function entries(db: Kysely<any>, table: string, where: RawBuilder<unknown>) {
  return db.transaction().execute(async (tx) => {
    await sql`SET LOCAL enable_seqscan = off`.execute(tx);
    await sql`SET LOCAL enable_indexscan = off`.execute(tx);
    const plan = await sql<{ 'QUERY PLAN': unknown }>`EXPLAIN (ANALYZE, FORMAT JSON) SELECT 1 FROM ${sql.table(table)} WHERE ${where}`.execute(tx);
    const scans: { 'Node Type': string; 'Actual Rows': number }[] = [];
    const walk = (n: { Plans?: unknown[] } & Record<string, unknown>) => {
      if (n['Node Type'] === 'Bitmap Index Scan') scans.push(n as never);
      for (const c of n.Plans ?? []) walk(c as never);
    };
    walk((plan.rows[0]!['QUERY PLAN'] as { Plan: never }[])[0]!.Plan);
    const live = await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.table(table)} WHERE ${where}`.execute(tx);
    assert.equal(scans.length, 1, 'the plan scans one index once');
    return { walked: scans[0]!['Actual Rows'], live: Number(live.rows[0]!.n) };
  });
}

/** `read()` again every 200 ms until `done` holds of it or three vacuum periods have passed; its last value. */
async function withinTicks<T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  let now = await read();
  for (const until = Date.now() + CHURN_VACUUM_MS * 3; !done(now) && Date.now() < until;) {
    await new Promise((r) => setTimeout(r, 200));
    now = await read();
  }
  return now;
}

/** `entries` once a vacuum has left no dead ones (waiting at most three vacuum periods). */
const vacuumed = (db: Kysely<any>, table: string, where: RawBuilder<unknown>) =>
  withinTicks(
    () => entries(db, table, where),
    (e) => e.walked === e.live,
  );

describe('vacuum of the churning tables [postgres]', { skip: await skipUnless('postgres') }, () => {
  const s = useServer({ db: 'postgres', rateLimits: GENEROUS });

  it('the list-count tables: no entries of folded deltas are left to walk; the totals stay exact', async () => {
    const { token: own, companyId } = await s.newCompany();
    const db = s.app.database.db;
    for (let i = 0; i < 40; i++) assert.equal((await s.post('/projects', { display_name: `vacuumed ${i}` }, { token: own })).status, 201);
    // 40 sequential creates fold 35 or more deltas; until a vacuum their entries are walked too
    // (40 entries for 5 live deltas without it, checked).
    const after = await vacuumed(db, 'list_count_deltas', sql`tbl = 'projects' AND company_id = ${companyId}`);
    assert.equal(after.walked, after.live, `entries walked after the vacuum: ${after.walked}, live deltas ${after.live}`);
    assert.ok(after.live < 8);
    assert.equal((await s.get('/projects', { token: own })).body.total, 40);
  });

  it('the job queue: a job handed from deployment to deployment leaves no entries of its old subjects to walk', async () => {
    const db = s.app.database.db;
    const app = await createApp(s);
    // The first deployment runs (the default progression advances it on reads only); each later
    // trigger supersedes the one waiting and takes over its queued job: the job row gets a new
    // subject every time, and the old subject's index entry points at a dead version.
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await trigger(s, app.id)).id);
    const subjects = sql`subject_id IN (${sql.join(ids)})`;
    const during = await entries(db, 'jobs', subjects);
    assert.equal(during.live, 2, 'one job for the running deployment, one handed over to the newest');
    assert.ok(during.walked > 20, `entries walked before a vacuum could run: ${during.walked}`);
    const after = await vacuumed(db, 'jobs', subjects);
    assert.equal(after.walked, after.live, `entries walked after the vacuum: ${after.walked}, live jobs ${after.live}`);
  });

  it('a table that holds rows and was never analyzed is analyzed: a lookup of an application by id and company no longer walks the company', async () => {
    const db = s.app.database.db;
    const { id, company_id } = await createApp(s);
    const analyzed = async () =>
      (
        await sql<{ analyzed: boolean }>`SELECT (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL) AS analyzed
          FROM pg_stat_user_tables WHERE relname = 'applications' AND schemaname = current_schema()`.execute(db)
      ).rows[0]!.analyzed;
    assert.equal(await withinTicks(analyzed, (yes) => yes), true);
    // Unanalyzed, the plan walked an index on the company (applications_name, checked); with
    // statistics it takes the primary key, or reads the table's one page.
    const used = await plannedIndexes(s, db.selectFrom('applications').selectAll().where('id', '=', id).where('company_id', '=', company_id).compile());
    assert.ok(
      used.every((index) => index === 'applications_pkey'),
      `the lookup took ${used.join(', ')}`,
    );
  });

  it('a table analyzed while nearly empty is analyzed again once its rows changed past the threshold: a deployment read by id takes the primary key', async () => {
    const db = s.app.database.db;
    // Autovacuum off for the table (as it is on the machines these tests run on): only the
    // server's tick can analyze it.
    await sql`ALTER TABLE deployments SET (autovacuum_enabled = false)`.execute(db);
    try {
      const app = await createApp(s);
      await trigger(s, app.id);
      await sql`ANALYZE deployments`.execute(db);
      // 50 plus 10% of the rows counted at that analysis (autovacuum's defaults) must change.
      const ids: string[] = [];
      for (let i = 0; i < 150; i++) ids.push((await trigger(s, app.id)).id);
      const rows = async () =>
        Number((await sql<{ n: number }>`SELECT reltuples AS n FROM pg_class WHERE oid = 'deployments'::regclass`.execute(db)).rows[0]!.n);
      const counted = await withinTicks(rows, (n) => n >= 150);
      assert.ok(counted >= 150, `rows the planner counts: ${counted}, stored: 150 or more`);
      // The statement every deployment read runs, with its generic plan (as the server's
      // connections run it): planned as the one page of the first analysis it scanned the table.
      const used = await plannedIndexes(s, db.selectFrom('deployments').selectAll().where('id', '=', ids[0]!).compile());
      assert.deepEqual(used, ['deployments_pkey'], 'the read by id');
    } finally {
      await sql`ALTER TABLE deployments RESET (autovacuum_enabled)`.execute(db);
    }
  });

  it('a table that doubled in size since its last analysis is analyzed again, with fewer rows changed than the modification rule asks for', async () => {
    const db = s.app.database.db;
    await sql`CREATE TABLE growth_probe (id integer PRIMARY KEY, pad text) WITH (autovacuum_enabled = false)`.execute(db);
    try {
      await sql`INSERT INTO growth_probe VALUES (0, repeat('x', 1500))`.execute(db);
      await sql`ANALYZE growth_probe`.execute(db);
      // 40 rows of 1,500 bytes: 8 pages or more, from one, and 40 changes, fewer than 50.
      await sql`INSERT INTO growth_probe SELECT i, repeat('x', 1500) FROM generate_series(1, 40) i`.execute(db);
      const rows = async () =>
        Number((await sql<{ n: number }>`SELECT reltuples AS n FROM pg_class WHERE oid = 'growth_probe'::regclass`.execute(db)).rows[0]!.n);
      assert.equal(await withinTicks(rows, (n) => n === 41), 41, 'rows the planner counts');
    } finally {
      await sql`DROP TABLE growth_probe`.execute(db);
    }
  });
});
