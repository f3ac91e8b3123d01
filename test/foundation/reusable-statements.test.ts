// Statements compiled once and run with new values (src/shared/db/reusable.ts), on SQLite and on
// a real PostgreSQL server: the same rows as the query builder gives, constants kept, values put
// in their places whatever they hold, inserts of every row count, and each shape built once.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type InsertQueryBuilder } from 'kysely';
import { later, type Database, type Tx } from '../../src/shared/db/index.js';
import { first, insertRows, reusable, type InsertTail } from '../../src/shared/db/reusable.js';
import { openScratchDatabase, skipUnless } from '../helpers/server.js';

interface Item {
  id: string;
  name: string;
  status: string;
  n: number | null;
}

/** The scratch table as the helpers' types see it (they are typed for the application's tables). */
const ITEMS = 'items' as never;
const items = (db: Tx) => (db as unknown as { selectFrom(t: string): any }).selectFrom('items');

const AWKWARD = [`it's`, 'back\\slash', '$1', '-- not a comment', '/* nor this */', 'ünïcødé ✓', ''];

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`reusable statements (${kind})`, async () => {
    const skip = kind === 'postgres' ? await skipUnless('postgres') : false;
    let database: Database;
    let db: Tx;
    let cleanup: () => Promise<void> = async () => {};

    before(async () => {
      if (skip) return;
      ({ database, cleanup } = await openScratchDatabase(kind, 'slipway-reusable-'));
      db = database.db;
      await sql`create table items (id varchar(36) primary key, name text not null unique, status text not null, n integer)`.execute(db);
    });

    after(async () => {
      if (skip) return;
      await database.close();
      await cleanup();
    });

    it('is built once and answers each set of values as the query builder does, constants kept', { skip }, async () => {
      for (const [i, name] of AWKWARD.entries())
        await db.executeQuery(insertRows(db, ITEMS, [{ id: `i${i}`, name, status: i % 2 ? 'odd' : 'even', n: i } as never]));
      let built = 0;
      const byName = reusable((d, p: { name: string; other: string }) => {
        built++;
        return items(d).selectAll().where('status', 'in', ['odd', 'even']).where('name', 'not in', ['nobody', p.other]).where('name', '=', p.name);
      });
      for (const name of AWKWARD) {
        const got = await first(db, byName(db, { name, other: 'x' }));
        const want = await items(db).selectAll().where('name', '=', name).executeTakeFirst();
        assert.deepEqual(got, want);
        assert.equal((got as Item).name, name);
      }
      // A value that the shape's own list excludes: no row, so the slot in the list got its value.
      assert.equal(await first(db, byName(db, { name: `it's`, other: `it's` })), undefined);
      assert.equal(built, 1, 'built once for this dialect');
      assert.equal(byName(db, { name: 'a', other: 'b' }).sql, byName(db, { name: 'c', other: 'd' }).sql);
    });

    it('inserts rows of every count, with the values exactly as given', { skip }, async () => {
      const rows = (prefix: string, count: number): Item[] =>
        Array.from({ length: count }, (_, i) => ({
          id: `${prefix}${i}`,
          name: `${prefix} ${AWKWARD[i % AWKWARD.length]}`,
          status: 'new',
          n: i % 2 ? null : i,
        }));
      for (const count of [1, 3, 2, 4]) await db.executeQuery(insertRows(db, ITEMS, rows(`c${count}-`, count) as never[]));
      const stored = await items(db).selectAll().where('status', '=', 'new').orderBy('id').execute();
      const want = [1, 3, 2, 4].flatMap((count) => rows(`c${count}-`, count)).sort((a, b) => (a.id < b.id ? -1 : 1));
      assert.deepEqual(stored, want);
      assert.equal(stored.length, 10);
    });

    it('a tail (ON CONFLICT DO NOTHING RETURNING) decides per insert', { skip }, async () => {
      const ifFree: InsertTail = {
        name: 'test-if-free',
        finish: (q: InsertQueryBuilder<any, any, any>) => q.onConflict((oc) => oc.column('name').doNothing()).returning('id'),
      };
      const one = (id: string, name: string) => first(db, insertRows(db, ITEMS, [{ id, name, status: 'tail', n: null } as never], ifFree));
      assert.deepEqual(await one('t1', 'taken?'), { id: 't1' });
      assert.equal(await one('t2', 'taken?'), undefined, 'the name is taken: nothing inserted, no row returned');
      assert.deepEqual(await one('t3', 'free'), { id: 't3' });
      assert.deepEqual(
        (await items(db).select('id').where('status', '=', 'tail').orderBy('id').execute()).map((r: { id: string }) => r.id),
        ['t1', 't3'],
      );
    });

    it('runs through `later` inside a transaction (PostgreSQL: sent with the COMMIT, values as literals)', { skip }, async () => {
      const rename = reusable((d, p: { id: string; name: string }) => (d as any).updateTable('items').set({ name: p.name }).where('id', '=', p.id));
      await db.transaction().execute(async (tx) => {
        await later(tx, insertRows(tx, ITEMS, [{ id: 'l1', name: 'later one', status: 'later', n: 7 } as never]));
        await later(tx, rename(tx, { id: 'l1', name: `it's later \\ $1` }));
      });
      assert.deepEqual(await items(db).selectAll().where('id', '=', 'l1').executeTakeFirst(), { id: 'l1', name: `it's later \\ $1`, status: 'later', n: 7 });
    });
  });
}
