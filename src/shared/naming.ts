// Uniqueness under concurrent requests, in one place for every module. On PostgreSQL requests run
// concurrently, so a look-up followed by a write lets several writers through (or one meets a
// unique index as a 500). Two rules cover it:
// - `insertNamed`: unique, URL-safe names derived from display names ("My Shop" -> "my-shop",
//   "my-shop-2"); the unique index decides, a loser takes another name.
// - `refuseIfTaken`: a check-then-write rule only so many writers may pass (one CDN domain per
//   bucket, one web process per application, a limit per company); the writers take turns.
import { randomBytes } from 'node:crypto';
import type { InsertQueryBuilder, Kysely } from 'kysely';
import type { Tx } from './db/index.js';
import { lockFor } from './db/locks.js';
import { first as firstRow, insertRows, type InsertTail } from './db/reusable.js';
import type { DB } from './db/schema.js';
import { slugify } from './ids.js';

/** Tables whose rows have a name unique in a scope: a unique index on [scope column, name column]. */
const NAMED = {
  applications: ['company_id', 'name'],
  databases: ['company_id', 'name'],
  projects: ['company_id', 'name'],
  load_balancers: ['company_id', 'name'],
  static_sites: ['company_id', 'name'],
  object_storages: ['company_id', 'name'],
  processes: ['app_id', 'key'],
} as const;

export type NamedTable = keyof typeof NAMED;
type Scope<T extends NamedTable> = (typeof NAMED)[T][0];
type NameColumn<T extends NamedTable> = (typeof NAMED)[T][1];
/** What `build` makes: a row of `T`, with its scope and name columns. */
type NamedRow<T extends NamedTable> = { [K in Scope<T> | NameColumn<T>]: string };

/** The insert of a named row does nothing when the name is taken in its scope, and then returns no row. */
const ifNameFree = (columns: readonly string[]): InsertTail => ({
  name: 'if-name-free',
  finish: (q: InsertQueryBuilder<DB, NamedTable, object>) => q.onConflict((oc) => oc.columns(columns as never).doNothing()).returning('id'),
});
const IF_NAME_FREE = Object.fromEntries(Object.entries(NAMED).map(([table, columns]) => [table, ifNameFree(columns)])) as Record<NamedTable, InsertTail>;

/**
 * Inserts the row that `build` makes for a name derived from `displayName`, unique in the row's
 * scope (`scopeId`: the company, or the application of a process): the slug itself when free, else
 * the first free `-2`, `-3`, ... The unique index decides: a row whose name a concurrent request
 * took between the look-up and the insert is not inserted (ON CONFLICT DO NOTHING) and the next
 * round picks another name, so concurrent creates with one display name never meet a unique
 * violation (never a 500).
 */
export async function insertNamed<T extends NamedTable, R extends NamedRow<T>>(
  tx: Tx,
  table: T,
  scopeId: string,
  displayName: string,
  build: (name: string) => R,
): Promise<R> {
  const [scope, column]: readonly string[] = NAMED[table];
  const db = tx as unknown as Kysely<Record<NamedTable, Record<'id' | 'company_id' | 'app_id' | 'name' | 'key', string>>>;
  const from: NamedTable = table;
  const taken = async (n: string) =>
    !!(await db
      .selectFrom(from)
      .select('id')
      .where(scope as 'company_id', '=', scopeId)
      .where(column as 'name', '=', n)
      .executeTakeFirst());
  const insert = async (row: R) => !!(await firstRow(tx, insertRows(tx, table, [row as never], IF_NAME_FREE[table])));
  // The display name's own slug first, without a look-up: usually free, so one statement.
  const first = build(slugify(displayName));
  if (await insert(first)) return first;
  for (let attempt = 0; attempt < 10; attempt++) {
    // After losing a race, every loser would pick the same next free name: take a random suffix.
    const row = build(attempt === 0 ? await uniqueName(displayName, taken) : randomName(displayName));
    if (await insert(row)) return row;
  }
  throw new Error(`no free name for "${displayName}" after 10 attempts`); // a 500: retrying helps
}

async function uniqueName(displayName: string, taken: (candidate: string) => Promise<boolean>): Promise<string> {
  const base = slugify(displayName);
  if (!(await taken(base))) return base;
  for (let i = 2; i < 20; i++) if (!(await taken(`${base}-${i}`))) return `${base}-${i}`;
  return randomName(displayName);
}

const randomName = (displayName: string) => `${slugify(displayName)}-${randomBytes(3).toString('hex')}`;

/**
 * A rule that lets only so many concurrent writers pass: the writers of `key` take turns for the
 * rest of their transactions (`lockFor`), so `taken` sees what every earlier winner committed,
 * and `refusal()` is thrown when it says the place is taken. Call it inside the write's
 * transaction, before anything reads the rows `taken` reads; the winner writes in that same
 * transaction.
 */
export async function refuseIfTaken(tx: Tx, key: string, taken: () => Promise<boolean>, refusal: () => Error): Promise<void> {
  await lockFor(tx, key);
  if (await taken()) throw refusal();
}
