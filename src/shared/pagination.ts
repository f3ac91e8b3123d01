// Offset pagination with a stable order (created_at, id) served by an index on
// (company_id, created_at, id).
//
// A company's whole list of a counted table (`countedTable` in the table's migration) costs the
// same at any offset: triggers keep the number of rows per company and a version that changes
// with every insert and delete (`list_counts`), so the total is one row read, and deep offsets
// start from bookmarks (the sort key of every BOOKMARK_EVERY-th row, kept in memory per version)
// and skip fewer than BOOKMARK_EVERY rows from there. On SQLite such a page is also kept in memory
// until the database's content changes (`contentVersion`): a list polled while nothing is written
// costs no query at all. On PostgreSQL, where other processes write too, requests for the same
// page outside a transaction are coalesced instead: the requests for a page that arrive in the
// same turn of the event loop, or while its query is in flight, share the next query, which starts
// after all of them arrived (so each still sees every write that committed before it asked). Both hand out one
// frozen result to all their callers (`sharedResult`), which the router serializes once.
//
// On PostgreSQL a write does not update the company's `list_counts` row: it appends a +1 or -1
// to `list_count_deltas`, and the counts are that row plus the list's deltas (`countDeltas`).
// One row updated by every create serialized concurrent creates on its lock, WAL flush included.
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { Tx } from './db/index.js';
import { contentVersion } from './db/content-version.js';
import { Coalescer } from './coalesce.js';
import { sharedResult } from './shared-results.js';
import { isPostgres } from './db/dialect.js';
import { all, reusableBy } from './db/reusable.js';

export interface Page {
  limit: number;
  offset: number;
}

export function pageOf(q: { limit?: number; offset?: number } | undefined): Page {
  return { limit: q?.limit ?? 25, offset: q?.offset ?? 0 };
}

export interface PageResult<T> {
  data: T[];
  total: number;
  offset: number;
  limit: number;
}

/** The highest total a list reports (and the highest offset it accepts). */
const MAX_TOTAL = 10000;
const BOOKMARK_EVERY = 250;
/** The column the rows of a shallow counted page, or of any page of another list, carry its total in (removed before returning). */
const TOTAL = '__list_total';
/** The column a deep counted page's rows carry the list's version in (removed before returning). */
const VERSION = '__list_version';
/** PostgreSQL: the alias of the one-row table a deep counted page's rows take those two from (`countsRow`). */
const COUNTS = '__list';

/**
 * A company's whole list of a counted table: the total and the deep offsets need not scan. Every
 * counted list of one table selects the same columns (pages are cached per table, not per query).
 */
export interface Counted {
  tx: Tx;
  table: CountedTable;
  companyId: string;
  /**
   * The columns the list selects (those of the query given to `paginate`): a shallow page is a
   * statement compiled once per table, columns and order (see `shallowPage`), not built per read.
   */
  columns: readonly string[];
  /** The content version the request arrived at (CallContext.asOf), read now when not given. */
  asOf?: string;
}

/** Tables whose rows per company are counted by triggers (see `countedTable`). */
export type CountedTable = 'projects' | 'applications';

export interface ListCountsTable {
  tbl: string;
  company_id: string;
  n: number;
  version: number;
}

declare module './db/schema.js' {
  interface DB {
    list_counts: ListCountsTable;
  }
}

interface Bookmarks {
  version: number;
  /** keys[k]: [created_at, id] of the row at position k * BOOKMARK_EVERY. */
  keys: [string, string][];
}
const bookmarks = new Map<string, Bookmarks>();
const MAX_BOOKMARKED_LISTS = 1000;

interface CachedPage {
  content: string;
  result: PageResult<unknown>;
}
/** SQLite: counted pages as of a content version (see `contentVersion`). */
const pages = new Map<string, CachedPage>();
const MAX_CACHED_PAGES = 2000;

/**
 * The page of `base` (a query, or a function that builds it), ordered and sliced, and its total:
 * the rows carry the count, which is asked for alone only when the page is empty. `counted`:
 * `base` is the company's whole list of that table (no further filter), so the count and the deep
 * offsets come from `list_counts` and the bookmarks.
 */
export async function paginate<DB, TB extends keyof DB, O>(
  base: SelectQueryBuilder<DB, TB, O> | (() => SelectQueryBuilder<DB, TB, O>),
  page: Page,
  order: { column: string; id: string; direction?: 'asc' | 'desc' } = { column: 'created_at', id: 'id' },
  counted?: Counted,
): Promise<PageResult<O>> {
  const direction = order.direction ?? 'asc';
  if (!counted) return page_(base, page, order, direction, counted);
  const key = `${counted.table}\0${counted.companyId}\0${page.offset}\0${page.limit}\0${order.column}\0${order.id}\0${direction}`;
  if (counted.tx.isTransaction) return page_(base, page, order, direction, counted);
  const content = counted.asOf ?? contentVersion(counted.tx);
  if (!content) return (await coalesced.call(key, () => page_(base, page, order, direction, counted))) as PageResult<O>;
  let hit = pages.get(key);
  if (hit?.content !== content) {
    const result = sharedResult(await page_(base, page, order, direction, counted));
    hit = { content, result };
    pages.delete(key);
    if (pages.size >= MAX_CACHED_PAGES) pages.delete(pages.keys().next().value!);
    pages.set(key, hit);
  }
  return hit.result as PageResult<O>;
}

/** PostgreSQL: counted pages read once for the requests of one turn, or that queued while the last read ran. */
const coalesced = new Coalescer<() => Promise<PageResult<unknown>>, PageResult<unknown>>(async (_key, reads) => {
  const r = sharedResult(await reads[reads.length - 1]!());
  return reads.map(() => r);
}, true);

async function page_<DB, TB extends keyof DB, O>(
  base: SelectQueryBuilder<DB, TB, O> | (() => SelectQueryBuilder<DB, TB, O>),
  page: Page,
  order: { column: string; id: string },
  direction: 'asc' | 'desc',
  counted: Counted | undefined,
): Promise<PageResult<O>> {
  const envelope = (data: O[], total: number) => ({ data, total: Math.min(total, MAX_TOTAL), offset: page.offset, limit: page.limit });
  if (counted && page.offset < BOOKMARK_EVERY) {
    // A shallow page: the rows carry the list's total (one query instead of two); an empty page
    // has no row to carry it.
    const key = [counted.table, order.column, order.id, direction, ...counted.columns] as const;
    const rows = await all(counted.tx, shallowPage(counted.tx, key, { companyId: counted.companyId, limit: page.limit, skip: page.offset }));
    if (rows.length) return envelope(...carried(rows as Record<string, unknown>[], TOTAL));
    return envelope([], (await listStats(counted)).n);
  }
  // A query built only when it runs: a page served from memory costs no query building either.
  const b = (typeof base === 'function' ? base() : base) as any;
  const slice = (q: any, skip: number, from?: [string, string]) => sliced(q, order, direction, page.limit, skip, from).execute() as Promise<any[]>;
  if (!counted) {
    // The page's rows carry the count (a subquery run once per statement): one query instead of
    // two, and an empty page (no row to carry it) asks for the count alone.
    const counting = b.clearSelect().select((eb: any) => eb.fn.countAll().as('n'));
    const rows = await slice(b.select(counting.as(TOTAL)), page.offset);
    if (rows.length) return envelope(...carried(rows, TOTAL));
    return envelope([], Number((await counting.executeTakeFirst())?.n ?? 0));
  }
  // Deep offsets of a counted list in its own order start from a bookmark.
  const bookmarked = page.offset >= BOOKMARK_EVERY && direction === 'asc' && order.column === 'created_at';
  if (bookmarked) {
    // With the list's bookmarks known, one query whose rows carry the list's total and version:
    // the page stands if that version is still the bookmarks' own (else, or for an empty page,
    // the current version and its bookmarks are read first, below).
    const known = bookmarks.get(`${counted.table}:${counted.companyId}`);
    const start = known && fromBookmark(known.keys, page.offset);
    if (start) {
      const counts = onPostgres(counted)
        ? b.crossJoin(countsRow(counted).as(COUNTS)).select([`${COUNTS}.${TOTAL}`, `${COUNTS}.${VERSION}`])
        : b.select([rowOf(counted, 'n').as(TOTAL), rowOf(counted, 'version').as(VERSION)]);
      const rows = await slice(counts, start.skip, start.from);
      if (rows.length && Number(rows[0][VERSION]) === known.version) return envelope(...carried(rows, TOTAL, VERSION));
    }
  }
  const { n: total, version } = await listStats(counted);
  const start = bookmarked && page.offset < total ? fromBookmark(await bookmarksOf(counted, version), page.offset) : undefined;
  return envelope(await slice(b, start?.skip ?? page.offset, start?.from), total);
}

/** What the count subqueries of a list need of it. */
type ListOf = Pick<Counted, 'tx' | 'table' | 'companyId'>;

const onPostgres = (c: ListOf) => isPostgres(c.tx);

/** A column of the list's `list_counts` row, as a subquery a page's rows can carry. */
const rowOf = (c: ListOf, column: 'n' | 'version') =>
  sql<number>`(SELECT ${sql.ref(column)} FROM list_counts WHERE tbl = ${c.table} AND company_id = ${c.companyId})`;

/**
 * The list's row count, as a subquery a page's rows can carry: its `list_counts` row, on
 * PostgreSQL plus the sum of its deltas not yet folded in (+1 and -1 each). A page that needs the
 * version as well takes both from `countsRow` there.
 */
const totalOf = (c: ListOf) =>
  onPostgres(c)
    ? sql<number>`(coalesce(${rowOf(c, 'n')}, 0) + coalesce((SELECT sum(delta) FROM list_count_deltas WHERE tbl = ${c.table} AND company_id = ${c.companyId}), 0))`
    : rowOf(c, 'n');

/**
 * PostgreSQL: the list's row count and version as a one-row table (columns TOTAL and VERSION):
 * its `list_counts` row plus its deltas (one version step each), from one scan of the deltas,
 * whose index holds an entry for every delta folded since the table was last vacuumed.
 */
const countsRow = (c: ListOf) =>
  sql`(SELECT coalesce(l.n, 0) + d.s AS ${sql.ref(TOTAL)}, coalesce(l.version, 0) + d.c AS ${sql.ref(VERSION)}
    FROM (SELECT coalesce(sum(delta), 0) AS s, count(*) AS c FROM list_count_deltas WHERE tbl = ${c.table} AND company_id = ${c.companyId}) AS d
    LEFT JOIN list_counts AS l ON l.tbl = ${c.table} AND l.company_id = ${c.companyId})`;

/**
 * A shallow page of a counted list (the company's whole list, from `skip` rows in), its rows
 * carrying the list's total: built and compiled once per table, order and columns (reusableBy).
 */
const shallowPage = reusableBy(
  (
    db,
    [table, column, id, direction, ...columns]: readonly [CountedTable, string, string, 'asc' | 'desc', ...string[]],
    p: { companyId: string; limit: number; skip: number },
  ) =>
    sliced(
      (db as Kysely<any>)
        .selectFrom(table)
        .select(columns)
        .select(totalOf({ tx: db, table, companyId: p.companyId }).as(TOTAL))
        .where('company_id', '=', p.companyId),
      { column, id },
      direction,
      p.limit,
      p.skip,
    ),
);

/** The page's rows of `q` in the list's order, `skip` rows after `from` (the sort key a bookmark holds) or the start. */
function sliced(q: any, order: { column: string; id: string }, direction: 'asc' | 'desc', limit: number, skip: number, from?: [string, string]) {
  if (from) q = q.where(sql`(${sql.ref(order.column)}, ${sql.ref(order.id)})`, '>=', sql`(${from[0]}, ${from[1]})`);
  return q.orderBy(order.column, direction).orderBy(order.id, direction).limit(limit).offset(skip);
}

/** The nearest bookmark at or before `offset` and the rows to skip from it; undefined for the first (the list's start). */
function fromBookmark(keys: [string, string][], offset: number): { from: [string, string]; skip: number } | undefined {
  const k = Math.min(Math.floor(offset / BOOKMARK_EVERY), keys.length - 1);
  return k > 0 ? { from: keys[k]!, skip: offset - k * BOOKMARK_EVERY } : undefined;
}

/** The rows without the columns they carried the list's counts in, and the list's total they carried. */
function carried(rows: Record<string, unknown>[], ...columns: string[]): [any[], number] {
  const total = Number(rows[0]![TOTAL] ?? 0);
  for (const r of rows) for (const c of columns) delete r[c];
  return [rows, total];
}

async function listStats(c: Counted): Promise<{ n: number; version: number }> {
  if (onPostgres(c)) {
    const r = await sql<Record<string, string>>`SELECT * FROM ${countsRow(c)} AS counts`.execute(c.tx);
    return { n: Number(r.rows[0]?.[TOTAL] ?? 0), version: Number(r.rows[0]?.[VERSION] ?? 0) };
  }
  const row = await c.tx.selectFrom('list_counts').select(['n', 'version']).where('tbl', '=', c.table).where('company_id', '=', c.companyId).executeTakeFirst();
  return { n: Number(row?.n ?? 0), version: Number(row?.version ?? 0) };
}

/** The sort keys at every BOOKMARK_EVERY-th position of the list as of `version` (read once per version). */
async function bookmarksOf(c: Counted, version: number): Promise<[string, string][]> {
  const id = `${c.table}:${c.companyId}`;
  const known = bookmarks.get(id);
  if (known && known.version === version) return known.keys;
  const r = await sql<{ created_at: string; id: string }>`
    SELECT created_at, id FROM (
      SELECT created_at, id, row_number() OVER (ORDER BY created_at, id) AS rn FROM ${sql.table(c.table)} WHERE company_id = ${c.companyId}
    ) AS ranked WHERE (rn - 1) % ${BOOKMARK_EVERY} = 0 AND rn <= ${MAX_TOTAL + 1} ORDER BY rn`.execute(c.tx);
  const keys = r.rows.map((row) => [row.created_at, row.id] as [string, string]);
  if (bookmarks.size >= MAX_BOOKMARKED_LISTS) bookmarks.delete(bookmarks.keys().next().value!);
  bookmarks.set(id, { version, keys });
  return keys;
}

/**
 * Triggers that keep `list_counts` for `table` (rows per company, and a version changed by every
 * insert and delete), and the counts of the rows already there. For a table's own migration.
 */
export async function countedTable(db: Kysely<any>, table: CountedTable): Promise<void> {
  if (isPostgres(db)) {
    await countAtCommit(db, table);
  } else {
    await sql
      .raw(
        `CREATE TRIGGER ${table}_counted_insert AFTER INSERT ON ${table} BEGIN
          INSERT INTO list_counts (tbl, company_id, n, version) VALUES ('${table}', NEW.company_id, 1, 1)
          ON CONFLICT (tbl, company_id) DO UPDATE SET n = n + 1, version = version + 1; END`,
      )
      .execute(db);
    await sql
      .raw(
        `CREATE TRIGGER ${table}_counted_delete AFTER DELETE ON ${table} BEGIN
          UPDATE list_counts SET n = n - 1, version = version + 1 WHERE tbl = '${table}' AND company_id = OLD.company_id; END`,
      )
      .execute(db);
  }
  await sql
    .raw(`INSERT INTO list_counts (tbl, company_id, n, version) SELECT '${table}', company_id, count(*), 0 FROM ${table} GROUP BY company_id`)
    .execute(db);
}

/**
 * PostgreSQL: `table`'s counting trigger (made anew) as a constraint trigger deferred to the
 * commit. A fold of deltas (`countDeltas`) locks the company's `list_counts` row; at commit it
 * holds that lock only while the transaction commits, not from its insert or delete until the
 * client sends COMMIT. Inside the writing transaction the counts do not
 * include its own rows yet; nothing reads them there.
 */
export async function countAtCommit(db: Kysely<any>, table: CountedTable): Promise<void> {
  await sql.raw(`DROP TRIGGER IF EXISTS ${table}_counted ON ${table}`).execute(db);
  await sql
    .raw(
      `CREATE CONSTRAINT TRIGGER ${table}_counted AFTER INSERT OR DELETE ON ${table} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slipway_list_count()`,
    )
    .execute(db);
}

/**
 * PostgreSQL: counting by appended deltas. The counting trigger's function (`countAtCommit`'s
 * triggers call it) inserts a +1 or -1 row into `list_count_deltas` instead of updating the
 * company's `list_counts` row, so concurrent creates and deletes take no common lock and commit
 * in parallel. Every 8th delta (a sequence: no lock either) folds its list's committed deltas into
 * its `list_counts` row (adding their sum to n and their number to the version, so both read the
 * same before and after), unless another transaction is folding that list (an advisory lock it
 * only tries): the deltas a read sums stay few. Readers add the deltas (`totalOf`, `countsRow`).
 */
export async function countDeltas(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`CREATE TABLE list_count_deltas (tbl varchar(64) NOT NULL, company_id varchar(36) NOT NULL, delta integer NOT NULL)`.execute(db);
  await sql`CREATE INDEX list_count_deltas_list ON list_count_deltas (tbl, company_id)`.execute(db);
  await sql`CREATE SEQUENCE list_count_delta_seq`.execute(db);
  await sql`CREATE OR REPLACE FUNCTION slipway_list_count() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      company varchar(36);
    BEGIN
      IF TG_OP = 'INSERT' THEN company := NEW.company_id; ELSE company := OLD.company_id; END IF;
      INSERT INTO list_count_deltas (tbl, company_id, delta) VALUES (TG_TABLE_NAME, company, CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END);
      IF nextval('list_count_delta_seq') % 8 = 0 AND pg_try_advisory_xact_lock(hashtext('slipway_list_count:' || TG_TABLE_NAME || ':' || company)) THEN
        WITH folded AS (DELETE FROM list_count_deltas WHERE tbl = TG_TABLE_NAME AND company_id = company RETURNING delta)
        INSERT INTO list_counts (tbl, company_id, n, version)
          SELECT TG_TABLE_NAME, company, coalesce(sum(delta), 0), count(*) FROM folded
        ON CONFLICT (tbl, company_id) DO UPDATE SET n = list_counts.n + EXCLUDED.n, version = list_counts.version + EXCLUDED.version;
      END IF;
      RETURN NULL;
    END $$`.execute(db);
}

/** The `list_counts` table and, on PostgreSQL, the trigger function `countedTable` uses. */
export async function createListCounts(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('list_counts')
    .addColumn('tbl', 'varchar(64)', (c) => c.notNull())
    .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('n', 'integer', (c) => c.notNull())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('list_counts_pk', ['tbl', 'company_id'])
    .execute();
  if (!isPostgres(db)) return;
  await sql`CREATE FUNCTION slipway_list_count() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO list_counts (tbl, company_id, n, version) VALUES (TG_TABLE_NAME, NEW.company_id, 1, 1)
        ON CONFLICT (tbl, company_id) DO UPDATE SET n = list_counts.n + 1, version = list_counts.version + 1;
      ELSE
        UPDATE list_counts SET n = n - 1, version = version + 1 WHERE tbl = TG_TABLE_NAME AND company_id = OLD.company_id;
      END IF;
      RETURN NULL;
    END $$`.execute(db);
}
