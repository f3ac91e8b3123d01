// State snapshots: every table of every module written to one versioned JSON document and read
// back into a server on either database. The tables, their columns and their foreign keys are read
// from the database itself, so a module's new table is in every snapshot without being declared:
// parents are written before children (foreign keys), and a company's rows are found by the
// table's `company_id` column, or else by the foreign key to a parent that has one (a bucket's keys
// through the bucket). Jobs name no company: a company's jobs are those whose subject or payload
// names one of its rows. Values are the stored ones (hashed tokens, encrypted secrets): the file is
// only readable by a server with the same secret key, named by its fingerprint. Rows whose content
// is kept outside the database (a bucket's objects) are written only with that content (`blobs`),
// through the `ExternalBytes` of the module that keeps it, which the callers pass in. The document
// is written and read as a stream (stream.ts): the rows are held in memory, the content never is.
import { Readable } from 'node:stream';
import { sql, type RawBuilder } from 'kysely';
import type { AppContext } from '../context.js';
import type { Db, Tx } from '../db/index.js';
import { isPostgres } from '../db/dialect.js';
import { ApiError, badRequest, conflict } from '../errors.js';
import { readSnapshotStream, type Chunks, type StreamedSnapshot } from './stream.js';

export const SNAPSHOT_FORMAT = 'slipway-snapshot';
export const SNAPSHOT_VERSION = 3;
/** The versions an import reads: 1 (no objects), 2 (objects; written whole by older servers, the same members as 3), 3 (written as a stream). */
export const READABLE_VERSIONS: readonly number[] = [1, 2, 3];

export type Row = Record<string, unknown>;
export type Rows = Record<string, Row[]>;

/** One piece of content an export writes: the id the rows name it by, its size, and how to read it. */
export interface Content {
  id: string;
  size: number;
  open(): Promise<AsyncIterable<Buffer>>;
}

/** Where an import stores the content of a snapshot's rows as it arrives. */
export interface ContentReceiver {
  /** Stores the bytes of the content `id` (checked against the rows naming it), reading `body` to its end. */
  put(id: string, body: AsyncIterable<Buffer>): Promise<void>;
  /** The rows naming the new copies; refuses rows whose content did not come. */
  finish(): Rows;
  /** Removes the copies stored so far (the import did not commit). */
  undo(): Promise<void>;
}

/**
 * Rows whose content lives outside the database (object storage's objects in its blob store),
 * from the module that keeps them (its index.ts). Snapshots carry these rows only together with
 * their content; without it the stores come back empty. The content is streamed both ways.
 */
export interface ExternalBytes {
  /** The tables whose rows name stored content. */
  readonly tables: readonly string[];
  /** Refuses (throws) before anything is read or written when the rows name more content than a snapshot may carry. */
  checkSize(rows: Rows): void;
  /** The content the rows name, each piece once. */
  contents(rows: Rows): Content[];
  /** A receiver for the content the rows name. */
  receiver(rows: Rows): ContentReceiver;
  /** Removes the content of rows an import removed, once it has committed. */
  free(rows: Rows): Promise<void>;
}

/** The members of a snapshot before its content, in the order they are written. */
export interface SnapshotHead {
  format: typeof SNAPSHOT_FORMAT;
  version: number;
  /** The last schema migration applied where it was made: an import needs the same schema. */
  schema_version: string;
  created_at: string;
  /** The company it holds, or null for the whole server. */
  company: string | null;
  /** The secret key's fingerprint (crypto.ts): the encrypted columns are readable only under that key. */
  key_fingerprint: string;
  /** Whether it holds the content of stored objects (`blobs`) and their rows; false: those tables are left out. Absent in version 1. */
  objects: boolean;
  tables: Rows;
}

/** A whole snapshot in memory (a small one, or a document of version 1 or 2 passed as an object). */
export interface Snapshot extends SnapshotHead {
  /** With `objects`: the content each object (or open upload's part) row names by its `blob`, base64. */
  blobs?: Record<string, string>;
}

/**
 * Tables that are not state: the migrator's, those derived from others (list counts, kept by
 * triggers as rows are inserted; the key cache's change counter) or rebuilt by use (rate-limit
 * windows), and the request journal (a record of the server's own requests, not of what it holds).
 */
const DERIVED = new Set([
  'kysely_migration',
  'kysely_migration_lock',
  'auth_generation',
  'list_counts',
  'list_count_deltas',
  'rate_windows',
  'request_journal',
]);
const JOBS = 'jobs';

interface ForeignKey {
  column: string;
  parent: string;
  parentColumn: string;
}

interface Table {
  name: string;
  columns: string[];
  parents: ForeignKey[];
  /** The columns of each unique index and primary key (partial and expression indexes left out). */
  uniques: string[][];
}

/** The state tables of each database, read once: the schema changes only with migrations, at start. */
const described = new WeakMap<object, Promise<Table[]>>();

/** The state tables with their columns and foreign keys, parents before children. */
function stateTables(app: AppContext, tx: Tx): Promise<Table[]> {
  let tables = described.get(app.database);
  if (!tables) {
    tables = describeTables(tx);
    described.set(app.database, tables);
    tables.catch(() => described.delete(app.database));
  }
  return tables;
}

async function describeTables(db: Tx): Promise<Table[]> {
  const meta = await db.introspection.getTables();
  // The catalogs, not information_schema: its views take a large part of a second to answer.
  const keys = isPostgres(db)
    ? await sql<{ tbl: string; col: string; parent: string; parent_col: string }>`
        SELECT c.conrelid::regclass::text AS tbl, a.attname AS col, c.confrelid::regclass::text AS parent, p.attname AS parent_col
        FROM pg_constraint c
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
        JOIN pg_attribute p ON p.attrelid = c.confrelid AND p.attnum = c.confkey[1]
        WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace`.execute(db)
    : await sql<{ tbl: string; col: string; parent: string; parent_col: string }>`
        SELECT m.name AS tbl, p."from" AS col, p."table" AS parent, p."to" AS parent_col
        FROM sqlite_master m, pragma_foreign_key_list(m.name) p WHERE m.type = 'table'`.execute(db);
  // Unique indexes, a row per column in the index's order; a partial index (a rule on some rows,
  // such as one primary domain per service) or an expression index is not a plain set of names.
  const uniques = isPostgres(db)
    ? await sql<{ tbl: string; idx: string; col: string | null; plain: boolean }>`
        SELECT t.relname AS tbl, i.relname AS idx, a.attname AS col, (x.indpred IS NULL AND x.indexprs IS NULL) AS plain
        FROM pg_index x
        JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_class i ON i.oid = x.indexrelid
        CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, ord)
        LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
        WHERE x.indisunique AND t.relnamespace = current_schema()::regnamespace
        ORDER BY i.relname, k.ord`.execute(db)
    : await sql<{ tbl: string; idx: string; col: string | null; plain: number }>`
        SELECT m.name AS tbl, l.name AS idx, i.name AS col, l.partial = 0 AS plain
        FROM sqlite_master m, pragma_index_list(m.name) l, pragma_index_xinfo(l.name) i
        WHERE m.type = 'table' AND l."unique" = 1 AND i."key" = 1
        ORDER BY l.name, i.seqno`.execute(db);
  const tables = new Map<string, Table>();
  for (const t of meta)
    if (!t.isView && !DERIVED.has(t.name)) tables.set(t.name, { name: t.name, columns: t.columns.map((c) => c.name), parents: [], uniques: [] });
  for (const k of keys.rows) tables.get(k.tbl)?.parents.push({ column: k.col, parent: k.parent, parentColumn: k.parent_col });
  const indexes = new Map<string, { tbl: string; cols: (string | null)[]; plain: boolean }>();
  for (const u of uniques.rows) {
    const i = indexes.get(u.idx) ?? { tbl: u.tbl, cols: [], plain: !!u.plain };
    i.cols.push(u.col);
    indexes.set(u.idx, i);
  }
  for (const i of indexes.values()) if (i.plain && i.cols.every((c) => c !== null)) tables.get(i.tbl)?.uniques.push(i.cols as string[]);
  // Depth-first, parents first; names sorted so every snapshot lists the tables in one order.
  const ordered: Table[] = [];
  const seen = new Set<string>();
  const visit = (t: Table) => {
    if (seen.has(t.name)) return;
    seen.add(t.name);
    for (const p of t.parents) if (p.parent !== t.name && tables.has(p.parent)) visit(tables.get(p.parent)!);
    ordered.push(t);
  };
  for (const name of [...tables.keys()].sort()) visit(tables.get(name)!);
  return ordered;
}

/** The condition that picks `company`'s rows of `table`, or null when its rows belong to no company. */
function companyCondition(tables: Map<string, Table>, table: Table, company: string): RawBuilder<unknown> | null {
  if (table.name === 'companies') return sql`id = ${company}`;
  if (table.columns.includes('company_id')) return sql`company_id = ${company}`;
  for (const p of table.parents) {
    const parent = tables.get(p.parent);
    const cond = parent && parent !== table ? companyCondition(tables, parent, company) : null;
    if (cond) return sql`${sql.ref(p.column)} IN (SELECT ${sql.ref(p.parentColumn)} FROM ${sql.table(p.parent)} WHERE ${cond})`;
  }
  return null;
}

/** The last migration applied: snapshots move only between servers on the same schema. */
async function schemaVersion(db: Tx): Promise<string> {
  const r = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name DESC LIMIT 1`.execute(db);
  return r.rows[0]?.name ?? '';
}

const rowsOf = async (db: Tx, table: string, where: RawBuilder<unknown> | null): Promise<Row[]> =>
  (await sql<Row>`SELECT * FROM ${sql.table(table)}${where ? sql` WHERE ${where}` : sql``} ORDER BY 1`.execute(db)).rows;

/** Whether a job works on one of `ids`: its subject, or a string anywhere in its payload. */
function jobOf(ids: Set<string>, job: Row): boolean {
  if (typeof job.subject_id === 'string' && ids.has(job.subject_id)) return true;
  const walk = (v: unknown): boolean =>
    typeof v === 'string' ? ids.has(v) : Array.isArray(v) ? v.some(walk) : v !== null && typeof v === 'object' ? Object.values(v).some(walk) : false;
  try {
    return walk(JSON.parse(String(job.payload)));
  } catch {
    return false;
  }
}

/** Every state row of the server, or of one company (rows by table, parents first). */
async function readRows(db: Tx, tables: Table[], company: string | null): Promise<Record<string, Row[]>> {
  const out: Record<string, Row[]> = {};
  const byName = new Map(tables.map((t) => [t.name, t]));
  const ids = new Set<string>();
  for (const t of tables) {
    if (company && t.name === JOBS) continue;
    const where = company ? companyCondition(byName, t, company) : null;
    if (company && !where) continue;
    const rows = (await rowsOf(db, t.name, where)).map(plain);
    if (company) for (const r of rows) if (typeof r.id === 'string') ids.add(r.id);
    out[t.name] = rows;
  }
  if (company && byName.has(JOBS)) out[JOBS] = (await rowsOf(db, JOBS, null)).map(plain).filter((j) => jobOf(ids, j));
  return out;
}

/** A row as JSON values: 64-bit integers as numbers (epoch milliseconds and counters fit). */
function plain(row: Row): Row {
  for (const [k, v] of Object.entries(row)) if (typeof v === 'bigint') row[k] = Number(v);
  return row;
}

/** The rows of the `external` tables among `rows` (absent tables as empty lists). */
const externalRows = (external: ExternalBytes, rows: Rows): Rows => Object.fromEntries(external.tables.map((t) => [t, rows[t] ?? []]));

export interface ExportOptions {
  company?: string | null;
  /** The content kept outside the database; `objects` writes it (and the rows naming it) into the snapshot. */
  external?: ExternalBytes;
  objects?: boolean;
}

/** Rows are written in pieces of about this many characters, the bytes of stored content in base64 pieces of this many bytes. */
const PIECE = 256 * 1024;
/** A multiple of 3: each piece of base64 then ends without padding. */
const BASE64_PIECE = 3 * 64 * 1024;

/**
 * Reads the state in one transaction and answers the document as a stream of its text: the rows
 * (held in memory, as the database holds them) and then, with `objects`, each piece of stored
 * content read from its store and written as base64 while it is read, so the content is never
 * held whole. Refusals (an unknown company, content over the limit) are thrown before the stream
 * starts; content gone by the time it is read (an object deleted meanwhile) fails the stream, which
 * then ends without closing the document, and an import refuses it.
 */
export async function exportSnapshot(app: AppContext, opts: ExportOptions = {}): Promise<Readable> {
  const company = opts.company ?? null;
  const external = opts.external;
  if (opts.objects && !external) throw new Error('exporting objects needs the object store (ExternalBytes)');
  const { head, contents } = await app.database.db.transaction().execute(async (tx) => {
    const tables = await stateTables(app, tx);
    if (company && !(await rowsOf(tx, 'companies', sql`id = ${company}`)).length) throw new ApiError(404, `Company ${company} not found`);
    const rows = await readRows(tx, tables, company);
    let contents: Content[] | null = null;
    if (external && opts.objects) {
      const held = externalRows(external, rows);
      external.checkSize(held);
      contents = external.contents(held);
    } else if (external) for (const t of external.tables) delete rows[t];
    const head: SnapshotHead = {
      format: SNAPSHOT_FORMAT,
      version: SNAPSHOT_VERSION,
      schema_version: await schemaVersion(tx),
      created_at: new Date().toISOString(),
      company,
      key_fingerprint: app.secrets.fingerprint,
      objects: !!contents,
      tables: rows,
    };
    return { head, contents };
  });
  return Readable.from(documentText(head, contents), { objectMode: false, highWaterMark: PIECE });
}

/** The document's text, piece by piece: the members in the order of SnapshotHead, then `blobs`. */
async function* documentText(head: SnapshotHead, contents: Content[] | null): AsyncGenerator<string> {
  const { tables, ...members } = head;
  yield JSON.stringify(members).slice(0, -1) + ',\n"tables":{';
  let firstTable = true;
  for (const [name, rows] of Object.entries(tables)) {
    let piece = `${firstTable ? '' : ','}\n${JSON.stringify(name)}:[`;
    firstTable = false;
    for (let i = 0; i < rows.length; i++) {
      piece += (i ? ',\n' : '\n') + JSON.stringify(rows[i]);
      if (piece.length >= PIECE) {
        yield piece;
        piece = '';
      }
    }
    yield piece + ']';
  }
  yield '}';
  if (contents) {
    yield ',\n"blobs":{';
    let first = true;
    for (const c of contents) {
      yield `${first ? '' : ','}\n${JSON.stringify(c.id)}:"`;
      first = false;
      let carry = Buffer.alloc(0);
      for await (const chunk of await c.open()) {
        const bytes = carry.length ? Buffer.concat([carry, chunk]) : chunk;
        const whole = bytes.length - (bytes.length % 3);
        carry = Buffer.from(bytes.subarray(whole));
        for (let i = 0; i < whole; i += BASE64_PIECE) yield bytes.subarray(i, Math.min(whole, i + BASE64_PIECE)).toString('base64');
      }
      yield carry.toString('base64') + '"';
    }
    yield '\n}';
  }
  yield '}\n';
}

const isChunks = (v: unknown): v is Chunks =>
  v instanceof Readable || (!!v && typeof v === 'object' && typeof (v as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function');

/** A document passed as an object, read like a stream's. */
function inMemory(doc: unknown): StreamedSnapshot {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return { head: {}, blobs: null, end: async () => {} };
  const { blobs, ...head } = doc as Snapshot;
  if (blobs === undefined) return { head, blobs: null, end: async () => {} };
  if (!blobs || typeof blobs !== 'object' || Array.isArray(blobs)) throw badRequest('blobs must be an object of base64 strings');
  for (const [id, v] of Object.entries(blobs)) if (typeof v !== 'string') throw badRequest(`blobs.${id} must be a base64 string`);
  async function* bytes(v: string) {
    yield Buffer.from(v, 'base64');
  }
  async function* entries() {
    for (const [id, v] of Object.entries(blobs!)) yield { id, body: bytes(v) };
  }
  return { head, blobs: entries(), end: async () => {} };
}

/** Checks a document read from a file or a request before anything is written. */
function checkSnapshot(app: AppContext, s: unknown, schema: string, tables: Map<string, Table>): SnapshotHead {
  const doc = s as Partial<SnapshotHead> | null;
  if (!doc || typeof doc !== 'object' || doc.format !== SNAPSHOT_FORMAT) throw badRequest(`Not a Slipway snapshot (format must be "${SNAPSHOT_FORMAT}")`);
  if (!READABLE_VERSIONS.includes(doc.version as number))
    throw badRequest(`Snapshot version ${String(doc.version)} is not supported (this server reads versions ${READABLE_VERSIONS.join(', ')})`);
  // Version 1 had no objects: its buckets come back empty.
  if (doc.version === 1 && doc.objects === undefined) doc.objects = false;
  if (doc.schema_version !== schema)
    throw badRequest(
      `The snapshot was made on schema ${String(doc.schema_version)} and this server is on ${schema}: export and import with the same Slipway version`,
    );
  if (doc.key_fingerprint !== app.secrets.fingerprint)
    throw badRequest(
      `The snapshot's secrets were encrypted with another secret key (fingerprint ${String(doc.key_fingerprint)}, this server's is ${app.secrets.fingerprint}): ` +
        'start this server with the same SLIPWAY_SECRET_KEY (or the same <data dir>/secret.key) as the one that exported it',
    );
  if (doc.company !== null && typeof doc.company !== 'string') throw badRequest('company must be a company id or null');
  if (!doc.tables || typeof doc.tables !== 'object') throw badRequest('tables is missing');
  for (const [name, rows] of Object.entries(doc.tables)) {
    const t = tables.get(name);
    if (!t) throw badRequest(`The snapshot holds a table this server does not have: ${name}`);
    if (!Array.isArray(rows)) throw badRequest(`tables.${name} must be an array of rows`);
    for (const r of rows) {
      if (!r || typeof r !== 'object' || Array.isArray(r)) throw badRequest(`tables.${name} holds a row that is not an object`);
      for (const c of Object.keys(r)) if (!t.columns.includes(c)) throw badRequest(`tables.${name} has a column this server does not have: ${c}`);
    }
  }
  return doc as SnapshotHead;
}

/** A job that was running where the snapshot was made runs again here, as after a restart. */
const resumed = (table: string, r: Row): Row =>
  table === JOBS && r.status === 'running' ? { ...r, status: 'queued', lease_owner: null, lease_expires_at: null } : r;

/** Rows per statement: under SQLite's and PostgreSQL's limits on a statement's parameters. */
const PARAMETERS = 30_000;

async function insertAll(tx: Tx, table: Table, rows: Row[]) {
  const columns = table.columns.filter((c) => rows.some((r) => c in r));
  const per = Math.max(1, Math.floor(PARAMETERS / Math.max(1, columns.length)));
  for (let i = 0; i < rows.length; i += per) {
    const values = rows.slice(i, i + per).map((r) => Object.fromEntries(columns.map((c) => [c, r[c] ?? null])));
    await (tx as Db)
      .insertInto(table.name as never)
      .values(values as never)
      .execute();
  }
}

export interface ImportResult {
  company: string | null;
  tables: number;
  rows: number;
}

export interface ImportOptions {
  replace?: boolean;
  /** The content kept outside the database: stores a snapshot's `blobs` and frees what `replace` removed. */
  external?: ExternalBytes;
}

/**
 * Loads a snapshot in one transaction: `source` is the document's text as a stream (a request
 * body, standard input: read as it arrives, see stream.ts) or the document as an object. A
 * whole-server snapshot needs a server that holds nothing but its bootstrap (one company with its
 * users and keys) and replaces all of it; a company's snapshot needs that company absent, and none
 * of its names that are unique across the server (hostnames, bucket names) held by another company.
 * `replace` removes what is there first (everything, or that company's rows). The rows are read and
 * checked first; the stored content that follows them is written piece by piece as it arrives,
 * before the rows are inserted, and removed again when the transaction does not commit; the content
 * of rows `replace` removed is freed after it commits.
 */
export async function importSnapshot(app: AppContext, source: unknown, opts: ImportOptions = {}): Promise<ImportResult> {
  const external = opts.external;
  const doc = isChunks(source) ? await readSnapshotStream(source) : inMemory(source);
  let written: { undo(): Promise<void> } | undefined;
  let freed: Rows | undefined;
  let result: ImportResult;
  try {
    result = await app.database.db.transaction().execute(async (tx) => {
      const tables = await stateTables(app, tx);
      const byName = new Map(tables.map((t) => [t.name, t]));
      const s = checkSnapshot(app, doc.head, await schemaVersion(tx), byName);
      const incoming: Rows = { ...s.tables };
      if (external) checkExternal(external, s, doc.blobs !== null);
      else if (s.objects) throw badRequest('This import cannot store objects: import with the CLI or /_admin/snapshots');
      await app.keys.changing(tx);
      if (s.company) {
        const company = s.company;
        const held = await readRows(tx, tables, company);
        if (!opts.replace && held.companies?.length)
          throw conflict(`Company ${company} exists on this server: import with replace (?replace=1, --replace) to remove its rows first`);
        await deleteCompanyRows(tx, tables, byName, company, held[JOBS] ?? []);
        if (external) freed = externalRows(external, held);
        await refuseTakenNames(tx, tables, company, incoming);
      } else {
        const counts = await rowCounts(tx, tables);
        if (!opts.replace) {
          const held = tables.filter((t) => (counts.get(t.name) ?? 0) > beyondBootstrap(t.name)).map((t) => `${counts.get(t.name)} ${t.name}`);
          if (held.length)
            throw conflict(`This server holds state already (${held.join(', ')}): import with replace (?replace=1, --replace) to remove it first`);
        }
        if (external) freed = Object.fromEntries(await Promise.all(external.tables.map(async (t) => [t, counts.get(t) ? await rowsOf(tx, t, null) : []])));
        for (const t of [...tables].reverse()) if (counts.get(t.name)) await sql`DELETE FROM ${sql.table(t.name)}`.execute(tx);
      }
      if (external && s.objects) {
        const held = externalRows(external, incoming);
        external.checkSize(held);
        const receiver = external.receiver(held);
        written = receiver;
        for await (const blob of doc.blobs!) await receiver.put(blob.id, blob.body);
        Object.assign(incoming, receiver.finish());
      }
      await doc.end();
      let rows = 0;
      for (const t of tables) {
        const list = incoming[t.name];
        if (!list?.length) continue;
        try {
          await insertAll(
            tx,
            t,
            list.map((r) => resumed(t.name, r)),
          );
        } catch (e) {
          throw conflict(`The snapshot's ${t.name} rows do not fit this server's: ${(e as Error).message}`);
        }
        rows += list.length;
      }
      return { company: s.company, tables: Object.keys(s.tables).length, rows };
    });
  } catch (e) {
    await written?.undo().catch((err: unknown) => app.log.warn({ err }, 'snapshot import: could not remove the stored content of a failed import'));
    throw e;
  }
  await app.keys.announced();
  app.jobs.wake();
  if (freed && external)
    await external.free(freed).catch((err: unknown) => app.log.warn({ err }, 'snapshot import: could not remove the content of replaced objects'));
  return result;
}

/**
 * Refuses (409, before any row is written) a company's rows that would take a value another
 * company holds in a unique index: hostnames, bucket names, ids. Run once the company's own rows
 * are gone, so what remains is held by others.
 */
async function refuseTakenNames(tx: Tx, tables: Table[], company: string, incoming: Rows) {
  const taken: string[] = [];
  // Names (hostnames, bucket names) first, then ids: a clash of names is the one an operator can act on.
  const isId = (cols: string[]) => cols.length === 1 && cols[0] === 'id';
  const checks = [false, true].flatMap((ids) => tables.flatMap((t) => t.uniques.filter((cols) => isId(cols) === ids).map((cols) => ({ t, cols }))));
  for (const { t, cols } of checks) {
    const rows = incoming[t.name];
    if (!rows?.length) continue;
    const tuples = rows.map((r) => cols.map((c) => r[c])).filter((v) => v.every((x) => x !== null && x !== undefined));
    const per = cols.length === 1 ? 500 : 100;
    for (let i = 0; i < tuples.length && taken.length < 10; i += per) {
      const slice = tuples.slice(i, i + per);
      const where =
        cols.length === 1
          ? sql`${sql.ref(cols[0]!)} IN (${sql.join(slice.map((v) => v[0]))})`
          : sql.join(
              slice.map(
                (v) =>
                  sql`(${sql.join(
                    cols.map((c, k) => sql`${sql.ref(c)} = ${v[k]}`),
                    sql` AND `,
                  )})`,
              ),
              sql` OR `,
            );
      const owner = t.columns.includes('company_id') ? sql`, company_id` : sql``;
      const found = await sql<Row>`SELECT ${sql.join(cols.map((c) => sql.ref(c)))}${owner} FROM ${sql.table(t.name)} WHERE ${where} LIMIT 10`.execute(tx);
      for (const r of found.rows)
        taken.push(`${t.name}.${cols.join('+')} ${cols.map((c) => String(r[c])).join('+')}${r.company_id ? ` (company ${String(r.company_id)})` : ''}`);
    }
  }
  if (taken.length)
    throw conflict(
      `Company ${company} cannot be imported here: values its rows hold are unique across the server and taken by other rows: ${taken.slice(0, 10).join(', ')}. ` +
        'Nothing was imported: remove or rename those first, or import into another server',
    );
}

/** A snapshot's stored-content rows come with their content, or not at all. */
function checkExternal(external: ExternalBytes, s: SnapshotHead, hasBlobs: boolean) {
  if (typeof s.objects !== 'boolean') throw badRequest('objects must be true or false');
  if (s.objects) {
    if (!hasBlobs) throw badRequest('blobs is missing (the snapshot says it holds objects)');
    return;
  }
  if (hasBlobs) throw badRequest('blobs is only read from a snapshot with objects: true');
  for (const t of external.tables)
    if (s.tables[t]?.length) throw badRequest(`tables.${t} names stored content, which a snapshot carries only with objects: true and its blobs`);
}

/** How many rows of a table an empty server may hold: its bootstrap's company, users and keys, and server-wide records. */
function beyondBootstrap(table: string): number {
  if (table === JOBS || table === 'settings' || table === 'users' || table === 'api_keys') return Infinity;
  return table === 'companies' ? 1 : 0;
}

/** Every table's row count, in one statement. */
async function rowCounts(tx: Tx, tables: Table[]): Promise<Map<string, number>> {
  const r = await sql<{ tbl: string; n: number | string }>`${sql.join(
    tables.map((t) => sql`SELECT ${t.name} AS tbl, count(*) AS n FROM ${sql.table(t.name)}`),
    sql` UNION ALL `,
  )}`.execute(tx);
  return new Map(r.rows.map((row) => [row.tbl, Number(row.n)]));
}

/** Removes `company`'s rows (and `jobs`, its jobs), children first. */
async function deleteCompanyRows(tx: Tx, tables: Table[], byName: Map<string, Table>, company: string, jobs: Row[]) {
  for (const t of [...tables].reverse()) {
    if (t.name === JOBS) {
      const ids = jobs.map((j) => String(j.id));
      if (ids.length) await sql`DELETE FROM jobs WHERE id IN (${sql.join(ids)})`.execute(tx);
      continue;
    }
    const where = companyCondition(byName, t, company);
    if (where) await sql`DELETE FROM ${sql.table(t.name)} WHERE ${where}`.execute(tx);
  }
}
