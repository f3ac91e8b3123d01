// Unique, URL-safe `name`s derived from display names (e.g. "My Shop" -> "my-shop", "my-shop-2").
import { randomBytes } from 'node:crypto';
import type { InsertQueryBuilder, Kysely } from 'kysely';
import type { Tx } from './db/index.js';
import { first as firstRow, insertRows, type InsertTail } from './db/reusable.js';
import type { DB } from './db/schema.js';
import { slugify } from './ids.js';

/** Tables whose rows have a `name` unique per company (a unique index on (company_id, name)). */
export type NamedTable = 'applications' | 'databases' | 'projects' | 'load_balancers' | 'static_sites';

/** The insert of a named row does nothing when the name is taken, and then returns no row. */
const IF_NAME_FREE: InsertTail = {
  name: 'if-name-free',
  finish: (q: InsertQueryBuilder<DB, NamedTable, object>) => q.onConflict((oc) => oc.columns(['company_id', 'name']).doNothing()).returning('id'),
};

/**
 * Inserts the row that `build` makes for a name derived from `displayName`, unique in the company
 * (the slug itself when free, else the first free `-2`, `-3`, ...). The unique index decides: a row whose name a concurrent request took between the look-up and
 * the insert is not inserted (ON CONFLICT DO NOTHING) and the next round picks another name, so
 * concurrent creates with one display name never meet a unique violation (never a 500).
 */
export async function insertNamed<R extends { company_id: string; name: string }>(
  tx: Tx,
  table: NamedTable,
  companyId: string,
  displayName: string,
  build: (name: string) => R,
): Promise<R> {
  const db = tx as unknown as Kysely<Record<NamedTable, { id: string; company_id: string; name: string }>>;
  const taken = async (n: string) => !!(await db.selectFrom(table).select('id').where('company_id', '=', companyId).where('name', '=', n).executeTakeFirst());
  const insert = async (row: R) => !!(await firstRow(tx, insertRows(tx, table, [row as never], IF_NAME_FREE)));
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

export async function uniqueName(displayName: string, taken: (candidate: string) => Promise<boolean>): Promise<string> {
  const base = slugify(displayName);
  if (!(await taken(base))) return base;
  for (let i = 2; i < 20; i++) if (!(await taken(`${base}-${i}`))) return `${base}-${i}`;
  return randomName(displayName);
}

const randomName = (displayName: string) => `${slugify(displayName)}-${randomBytes(3).toString('hex')}`;
