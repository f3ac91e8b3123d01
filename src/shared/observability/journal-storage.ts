// The request journal's table (journal.ts): every statement on `request_journal`. One table for
// every process of the server (several processes on one PostgreSQL read and clear the same
// entries). Bounds (the newest SLIPWAY_JOURNAL_MAX, none older than SLIPWAY_JOURNAL_MINUTES) are
// applied by every read, and rows past them are deleted in batches (`trimRows`), so the table holds
// at most a batch per process more than the bounds.
//
// PostgreSQL: every write takes one advisory lock, so rows are committed in the order of their
// `seq` (a reader that saw an entry sees every entry with a smaller `seq` committed before it) and
// concurrent deletes do not deadlock.
import { sql, type Generated, type Kysely, type Migration } from 'kysely';
import { isPostgres } from '../db/dialect.js';
import type { Db, Tx } from '../db/index.js';

/** One recorded request; bodies and the query as JSON text (`null`: none). */
export interface RequestJournalTable {
  /** Increasing in commit order, for every process (an identity, never reused, not even after a DELETE). */
  seq: Generated<number>;
  /** When the request arrived (ISO 8601, milliseconds). */
  time: string;
  method: string;
  path: string;
  query: string;
  status: number;
  duration_ms: number;
  key_id: string | null;
  request_id: string;
  idempotency_key: string | null;
  request_body: string | null;
  response_body: string | null;
  request_truncated: number;
  response_truncated: number;
}

declare module '../db/schema.js' {
  interface DB {
    request_journal: RequestJournalTable;
  }
}

export type JournalRow = Omit<RequestJournalTable, 'seq'> & { seq: number };
export type NewJournalRow = Omit<RequestJournalTable, 'seq'>;

/** The journal's table (a core migration: the journal is shared machinery, not a module's). */
export const journalMigration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('request_journal')
      // SQLite: AUTOINCREMENT, so a number is not given again once its row was deleted.
      .addColumn('seq', isPostgres(db) ? 'bigserial' : 'integer', (c) => (isPostgres(db) ? c.primaryKey() : c.primaryKey().autoIncrement()))
      .addColumn('time', 'varchar(32)', (c) => c.notNull())
      .addColumn('method', 'varchar(16)', (c) => c.notNull())
      .addColumn('path', 'text', (c) => c.notNull())
      .addColumn('query', 'text', (c) => c.notNull())
      .addColumn('status', 'integer', (c) => c.notNull())
      .addColumn('duration_ms', 'double precision', (c) => c.notNull())
      .addColumn('key_id', 'varchar(36)')
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('idempotency_key', 'text')
      .addColumn('request_body', 'text')
      .addColumn('response_body', 'text')
      .addColumn('request_truncated', 'integer', (c) => c.notNull())
      .addColumn('response_truncated', 'integer', (c) => c.notNull())
      .execute();
  },
};

/** The bounds every read applies: the newest `max` rows, none older than `oldest` (when given). */
export interface Bounds {
  max: number;
  oldest?: string;
}

/** Runs `fn` holding the journal's lock (PostgreSQL; SQLite has one writer anyway). */
function locked<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if (!isPostgres(db)) return fn(db);
  return db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext('slipway_request_journal'))`.execute(tx);
    return fn(tx);
  });
}

/** The smallest `seq` within the newest `max` rows (0 when there are fewer): a subquery. */
const firstKept = (max: number) => sql<number>`(SELECT coalesce(min(k.seq), 0) FROM (SELECT seq FROM request_journal ORDER BY seq DESC LIMIT ${max}) k)`;

/** 14 columns: 500 rows stay far below SQLite's 32,766 parameters per statement. */
const INSERT_ROWS = 500;

/** Inserts rows, in their order. */
export async function insertRows(db: Db, rows: NewJournalRow[]): Promise<void> {
  await locked(db, async (tx) => {
    for (let i = 0; i < rows.length; i += INSERT_ROWS)
      await tx
        .insertInto('request_journal')
        .values(rows.slice(i, i + INSERT_ROWS))
        .execute();
  });
}

/** Deletes the rows past the bounds. */
export async function trimRows(db: Db, b: Bounds): Promise<void> {
  await locked(db, async (tx) => {
    const oldest = b.oldest;
    await tx
      .deleteFrom('request_journal')
      .where((eb) => (oldest === undefined ? eb('seq', '<', firstKept(b.max)) : eb.or([eb('seq', '<', firstKept(b.max)), eb('time', '<', oldest)])))
      .execute();
  });
}

export interface RowFilter {
  /** Rows with a larger `seq` only. */
  after: number;
  /** Rows with a smaller `seq` only (the next page of a scan). */
  before?: number;
  since?: string;
  method?: string;
  /** One status, or a class: [from, to). */
  status?: number | [number, number];
  /** A prefix of the path. */
  pathPrefix?: string;
}

/** Up to `limit` rows within the bounds that pass `f`, the newest first. */
export async function selectRows(db: Db, b: Bounds, f: RowFilter, limit: number): Promise<JournalRow[]> {
  let q = db.selectFrom('request_journal').selectAll().where('seq', '>=', firstKept(b.max)).where('seq', '>', f.after);
  if (f.before !== undefined) q = q.where('seq', '<', f.before);
  const since = b.oldest === undefined || (f.since !== undefined && f.since > b.oldest) ? f.since : b.oldest;
  if (since !== undefined) q = q.where('time', '>=', since);
  if (f.method !== undefined) q = q.where('method', '=', f.method);
  if (typeof f.status === 'number') q = q.where('status', '=', f.status);
  else if (f.status) q = q.where('status', '>=', f.status[0]).where('status', '<', f.status[1]);
  // substr counts characters on both databases.
  if (f.pathPrefix !== undefined) q = q.where(sql<string>`substr(path, 1, ${[...f.pathPrefix].length})`, '=', f.pathPrefix);
  return (await q.orderBy('seq', 'desc').limit(limit).execute()) as JournalRow[];
}

/** Deletes every row; returns how many were within the bounds. */
export function deleteRows(db: Db, b: Bounds): Promise<number> {
  return locked(db, async (tx) => {
    let q = tx
      .selectFrom('request_journal')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('seq', '>=', firstKept(b.max));
    if (b.oldest !== undefined) q = q.where('time', '>=', b.oldest);
    const kept = Number((await q.executeTakeFirst())?.n ?? 0);
    await tx.deleteFrom('request_journal').execute();
    return kept;
  });
}
