// The PostgreSQL connection wrapper (src/shared/db/postgres-client.ts): a transaction's BEGIN and
// its `later` writes travel with its next statement or its COMMIT, in order, written out together
// as one batch, each as its named prepared statement. Run against a real PostgreSQL server: round
// trips counted at the driver, what the statements see, that each text is parsed once per
// connection, what a failing write undoes, how results are read (rows, their values, counts of
// changed rows), and whether a deferred advisory lock still orders the reads after it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { fixedShape, later, together, wrappedPool } from '../../src/shared/db/postgres-client.js';
import { lockFor } from '../../src/shared/db/locks.js';
import type { Tx } from '../../src/shared/db/index.js';
import { createPgDatabase, skipUnless } from '../helpers/server.js';
import { waitFor } from '../helpers/util.js';

interface T {
  items: { id: number; name: string; data: Buffer | null };
}

/** This suite's transactions as the helpers' type (they only compile and run what they are given). */
const own = (tx: unknown) => tx as Tx;

describe('PostgreSQL round trips of a transaction', async () => {
  const skip = await skipUnless('postgres');
  let drop: (() => Promise<void>) | undefined;
  let raw: pg.Pool;
  let db: Kysely<T>;
  /**
   * Round trips sent to the server so far (every client.query of the driver's own clients); `sent`
   * holds their texts, a batch's statements joined by ";\n".
   */
  let trips = 0;
  const sent: string[] = [];
  /** Describe messages written (each asks the server for a RowDescription or NoData). */
  let describes = 0;

  before(async () => {
    if (skip) return;
    const made = await createPgDatabase();
    drop = made.drop;
    raw = new pg.Pool({ connectionString: made.url, max: 4 });
    // As the server's pool does: a connection that the database's drop at teardown terminates
    // (DROP DATABASE ... WITH (FORCE)) is an expected end, not an uncaught error.
    raw.on('error', () => {});
    raw.on('connect', (client) => {
      client.on('error', () => {});
      const connection = (client as unknown as { connection: { describe(m: unknown): void } }).connection;
      const describe = connection.describe.bind(connection);
      connection.describe = (m) => {
        describes++;
        describe(m);
      };
      const query = client.query.bind(client) as (...a: unknown[]) => unknown;
      (client as { query: unknown }).query = (...a: unknown[]) => {
        trips++;
        const first = a[0] as string | { text?: string; statements?: { text: string }[] };
        sent.push(typeof first === 'string' ? first : (first.statements?.map((s) => s.text).join(';\n') ?? String(first.text)));
        return query(...a);
      };
    });
    db = new Kysely<T>({ dialect: new PostgresDialect({ pool: wrappedPool(raw, pg) }) });
    await sql`create table items (id int primary key, name text not null, data bytea)`.execute(db);
  });
  after(async () => {
    await db?.destroy();
    await drop?.();
  });

  const reset = async () => {
    await sql`truncate items`.execute(db);
    trips = 0;
    sent.length = 0;
  };

  it('sends BEGIN and the deferred writes with the next statement, and the rest with COMMIT', { skip }, async () => {
    await reset();
    const count = await db.transaction().execute(async (tx) => {
      await later(own(tx), tx.insertInto('items').values({ id: 1, name: 'one', data: null }));
      await later(own(tx), tx.insertInto('items').values({ id: 2, name: 'two', data: null }));
      const n = await tx
        .selectFrom('items')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow();
      await later(own(tx), tx.updateTable('items').set({ name: 'uno' }).where('id', '=', 1));
      return Number(n.n);
    });
    assert.equal(count, 2, 'the read saw both deferred inserts');
    assert.equal(trips, 2, `two round trips: ${JSON.stringify(sent)}`);
    assert.match(sent[0]!, /^begin;\ninsert into "items" .* values \(\$1, \$2, \$3\);\ninsert into "items" .*;\nselect count/s);
    assert.match(sent[1]!, /^update "items" set "name" = \$1 where "id" = \$2;\ncommit$/);
    const rows = await db.selectFrom('items').selectAll().orderBy('id').execute();
    assert.deepEqual(
      rows.map((r) => [r.id, r.name]),
      [
        [1, 'uno'],
        [2, 'two'],
      ],
    );
  });

  it('sends the deferred writes as prepared statements: a text is parsed once per connection, not at every use', { skip }, async () => {
    await reset();
    let ofTransactions = 0;
    const prepared = await db.connection().execute(async (conn) => {
      for (let i = 1; i <= 3; i++)
        await conn.transaction().execute(async (tx) => {
          await later(own(tx), tx.insertInto('items').values({ id: i, name: `n${i}`, data: null }));
          await later(own(tx), tx.updateTable('items').set({ name: 'changed' }).where('id', '=', i));
        });
      ofTransactions = trips;
      return (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(conn)).rows.map((r) => r.statement);
    });
    assert.equal(prepared.filter((t) => t.startsWith('insert into "items"')).length, 1, JSON.stringify(prepared));
    assert.equal(prepared.filter((t) => t.startsWith('update "items"')).length, 1, JSON.stringify(prepared));
    assert.equal(ofTransactions, 3, `one round trip per transaction: ${JSON.stringify(sent)}`);
    const rows = await db.selectFrom('items').selectAll().orderBy('id').execute();
    assert.deepEqual(
      rows.map((r) => r.name),
      ['changed', 'changed', 'changed'],
    );
  });

  it('describes a prepared statement once per connection: its rows are read as described then', { skip }, async () => {
    await reset();
    await db
      .insertInto('items')
      .values({ id: 1, name: 'one', data: Buffer.from([7]) })
      .execute();
    const read = (q: Pick<Kysely<T>, 'selectFrom'>) => q.selectFrom('items').selectAll().where('id', '>', 0).execute();
    const before = describes;
    let first = 0;
    const results = await db.connection().execute(async (conn) => {
      // On its own, and at the end of a batch (after a deferred write, then COMMIT): each twice.
      const inBatch = (name: string) =>
        conn.transaction().execute(async (tx) => {
          await later(own(tx), tx.updateTable('items').set({ name }).where('id', '=', 1));
          return read(tx);
        });
      const out = [await read(conn), await inBatch('uno')];
      first = describes - before;
      out.push(await read(conn), await inBatch('eins'));
      return out;
    });
    // The select at its first run (and COMMIT, which returns no rows, unless this connection ran one before).
    assert.ok(first >= 1 && first <= 2, `${first} described at first`);
    assert.equal(describes - before - first, 0, 'nothing described again');
    assert.deepEqual(results, [
      [{ id: 1, name: 'one', data: Buffer.from([7]) }],
      [{ id: 1, name: 'uno', data: Buffer.from([7]) }],
      [{ id: 1, name: 'uno', data: Buffer.from([7]) }],
      [{ id: 1, name: 'eins', data: Buffer.from([7]) }],
    ]);
  });

  it('reads independent statements together: one round trip, each its own rows, in order', { skip }, async () => {
    await reset();
    await db
      .insertInto('items')
      .values([
        { id: 1, name: 'one', data: null },
        { id: 2, name: 'two', data: Buffer.from([1, 2]) },
      ])
      .execute();
    trips = 0;
    sent.length = 0;
    const got = await db.transaction().execute(async (tx) => {
      await later(own(tx), tx.updateTable('items').set({ name: 'uno' }).where('id', '=', 1));
      return together(own(tx), [
        tx.selectFrom('items').selectAll().where('id', '=', 1).compile(),
        tx.selectFrom('items').select(['name', 'data']).where('id', '=', 2).compile(),
        tx.selectFrom('items').select('id').where('id', '>', 5).compile(),
        tx
          .selectFrom('items')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .compile(),
      ]);
    });
    assert.deepEqual(got, [[{ id: 1, name: 'uno', data: null }], [{ name: 'two', data: Buffer.from([1, 2]) }], [], [{ n: '2' }]]);
    // BEGIN, the deferred update and the four reads in one round trip, then COMMIT.
    assert.equal(trips, 2, JSON.stringify(sent));
    assert.match(sent[0]!, /^begin;\nupdate "items" .*;\nselect \* from "items" .*;\nselect "name", "data" .*;\nselect "id" .*;\nselect count/s);
    // A second time on a connection that has described them: the same rows.
    const again = await db
      .transaction()
      .execute((tx) =>
        together(own(tx), [
          tx.selectFrom('items').selectAll().where('id', '=', 1).compile(),
          tx.selectFrom('items').select('id').where('id', '>', 5).compile(),
        ]),
      );
    assert.deepEqual(again, [[{ id: 1, name: 'uno', data: null }], []]);
    // Outside a transaction they are read one after the other.
    assert.deepEqual(
      await together(own(db), [
        db.selectFrom('items').select('id').where('id', '=', 2).compile(),
        db.selectFrom('items').select('id').where('id', '=', 1).compile(),
      ]),
      [[{ id: 2 }], [{ id: 1 }]],
    );
  });

  it('a failing statement read together fails every read of its batch and the transaction', { skip }, async () => {
    await reset();
    await db.insertInto('items').values({ id: 1, name: 'one', data: null }).execute();
    await assert.rejects(
      db.transaction().execute(async (tx) => {
        await later(own(tx), tx.updateTable('items').set({ name: 'uno' }).where('id', '=', 1));
        return together(own(tx), [
          tx.selectFrom('items').selectAll().where('id', '=', 1).compile(),
          sql`select 1 / (select count(*) - 1 from items) as x`.compile(tx),
          tx.selectFrom('items').select('id').compile(),
        ]);
      }),
      /division by zero/,
    );
    assert.deepEqual(await db.selectFrom('items').select('name').execute(), [{ name: 'one' }], 'the deferred update was rolled back');
  });

  it('names a text with an IN list only when its shape is fixed (built once by code)', { skip }, async () => {
    await reset();
    const fixed = fixedShape(db.selectFrom('items').select('id').where('name', 'in', ['a', 'b']).compile());
    const adHoc = db.selectFrom('items').select('name').where('id', 'in', [1, 2]).compile();
    const prepared = await db.connection().execute(async (conn) => {
      await conn.executeQuery(fixed);
      await conn.executeQuery(adHoc);
      return (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(conn)).rows.map((r) => r.statement);
    });
    assert.ok(prepared.includes(fixed.sql), JSON.stringify(prepared));
    assert.ok(!prepared.includes(adHoc.sql), JSON.stringify(prepared));
  });

  it('a prepared text whose result columns a migration changed is parsed again under a new name', { skip }, async () => {
    await reset();
    await db.insertInto('items').values({ id: 1, name: 'one', data: null }).execute();
    await db.connection().execute(async (conn) => {
      // The same text (select * of one item) at the end of a batch, and on its own.
      const inBatch = () =>
        conn.transaction().execute(async (tx) => {
          await later(own(tx), tx.updateTable('items').set({ name: 'batched' }).where('id', '=', 1));
          return tx.selectFrom('items').selectAll().where('id', '=', 1).execute();
        });
      const alone = () => conn.selectFrom('items').selectAll().where('id', '=', 1).execute();
      await inBatch();
      await alone();
      await sql`alter table items add column extra int`.execute(conn);
      // In a batch the statement fails its transaction once (nothing of it is kept) ...
      await assert.rejects(inBatch(), (e: { code?: string }) => e.code === '0A000');
      // ... and the text is parsed again from then on, on its own too.
      assert.deepEqual(Object.keys((await inBatch())[0]!).sort(), ['data', 'extra', 'id', 'name']);
      assert.deepEqual(Object.keys((await alone())[0]!).sort(), ['data', 'extra', 'id', 'name']);
      // On its own, the statement that meets the change is run again at once.
      await sql`alter table items drop column extra`.execute(conn);
      assert.deepEqual(Object.keys((await alone())[0]!).sort(), ['data', 'id', 'name']);
    });
  });

  it('reads results as the driver would: values by type, nulls, counts of changed rows; a value that cannot be sent fails alone', { skip }, async () => {
    await reset();
    const inserted = await db
      .insertInto('items')
      .values([
        { id: 1, name: 'one', data: Buffer.from([1, 2]) },
        { id: 2, name: 'two', data: null },
      ])
      .executeTakeFirst();
    assert.equal(inserted.numInsertedOrUpdatedRows, 2n);
    const updated = await db.updateTable('items').set({ name: 'both' }).where('id', 'in', [1, 2]).executeTakeFirst();
    assert.equal(updated.numUpdatedRows, 2n);
    // The same prepared statement read twice (its column parsers kept), then a differently shaped one.
    for (let i = 0; i < 2; i++)
      assert.deepEqual(await db.selectFrom('items').selectAll().where('id', '>', 0).orderBy('id').execute(), [
        { id: 1, name: 'both', data: Buffer.from([1, 2]) },
        { id: 2, name: 'both', data: null },
      ]);
    assert.deepEqual(await db.selectFrom('items').select(['name', 'id']).where('id', '=', 2).execute(), [{ name: 'both', id: 2 }]);
    const none = await db.deleteFrom('items').where('id', '=', 99).executeTakeFirst();
    assert.equal(none.numDeletedRows, 0n);
    // A value the driver cannot serialize (a cycle) fails that statement before anything is
    // written: the connection answers the next one.
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    await db.connection().execute(async (conn) => {
      await assert.rejects(sql`select ${cycle}::text as v`.execute(conn), /circular/i);
      assert.deepEqual((await sql<{ v: string }>`select ${'fine'}::text as v`.execute(conn)).rows, [{ v: 'fine' }]);
    });
  });

  it('a transaction that sent nothing costs nothing, committed or rolled back', { skip }, async () => {
    await reset();
    await db.transaction().execute(async () => {});
    assert.equal(trips, 0);
    await assert.rejects(
      db.transaction().execute(async (tx) => {
        await later(own(tx), tx.insertInto('items').values({ id: 1, name: 'never', data: null }));
        throw new Error('changed my mind');
      }),
      /changed my mind/,
    );
    assert.equal(trips, 0, 'the rolled-back writes were never sent');
    assert.equal((await db.selectFrom('items').selectAll().execute()).length, 0);
  });

  it('a deferred write that fails at COMMIT rolls back the whole transaction', { skip }, async () => {
    await reset();
    await db.insertInto('items').values({ id: 1, name: 'kept', data: null }).execute();
    await assert.rejects(
      db.transaction().execute(async (tx) => {
        await tx.insertInto('items').values({ id: 2, name: 'sent at once', data: null }).execute();
        await later(own(tx), tx.updateTable('items').set({ name: 'changed' }).where('id', '=', 1));
        await later(own(tx), tx.insertInto('items').values({ id: 1, name: 'duplicate', data: null }));
      }),
      (e: { code?: string }) => e.code === '23505',
    );
    const rows = await db.selectFrom('items').selectAll().execute();
    assert.deepEqual(
      rows.map((r) => [r.id, r.name]),
      [[1, 'kept']],
    );
    // The connection is usable again (the failed transaction was rolled back, not left open).
    for (let i = 0; i < 4; i++) await db.transaction().execute((tx) => tx.selectFrom('items').selectAll().execute());
  });

  it('deferred values arrive exactly, binary ones too, in order', { skip }, async () => {
    await reset();
    const names = [`it's`, 'back\\slash', '$1 and $2', 'line\nbreak -- not a comment', '/* nor this */', 'ünïcødé ✓', "''", "E'x'"];
    await db.transaction().execute(async (tx) => {
      for (const [i, name] of names.entries()) await later(own(tx), tx.insertInto('items').values({ id: i + 1, name, data: null }));
      await later(own(tx), tx.insertInto('items').values({ id: 100, name: 'binary', data: Buffer.from([0, 1, 2, 255]) }));
      await later(own(tx), tx.updateTable('items').set({ name: 'after binary' }).where('id', '=', 100));
    });
    const rows = await db.selectFrom('items').selectAll().orderBy('id').execute();
    assert.deepEqual(
      rows.filter((r) => r.id < 100).map((r) => r.name),
      names,
    );
    const bin = rows.find((r) => r.id === 100)!;
    assert.deepEqual([...bin.data!], [0, 1, 2, 255]);
    assert.equal(bin.name, 'after binary', 'the write after the binary one ran after it');
  });

  it('a lock a transaction holds already is not taken again; outside a transaction it is taken every time', { skip }, async () => {
    await reset();
    await db.transaction().execute(async (tx) => {
      await lockFor(own(tx), 'a');
      await lockFor(own(tx), 'b');
      await lockFor(own(tx), 'a');
      await tx.selectFrom('items').selectAll().execute();
    });
    await db.transaction().execute(async (tx) => {
      await lockFor(own(tx), 'a');
      await tx.selectFrom('items').selectAll().execute();
    });
    await lockFor(own(db), 'a');
    await lockFor(own(db), 'a');
    const locks = sent.join(';\n').match(/pg_advisory_xact_lock/g) ?? [];
    assert.equal(locks.length, 5, `a and b, a in the next transaction, and twice outside: ${JSON.stringify(sent)}`);
  });

  it('a deferred advisory lock is held before the next statement reads (it sees what the holder committed)', { skip }, async () => {
    await reset();
    let release!: () => void;
    const holding = new Promise<void>((r) => (release = r));
    const holder = db.transaction().execute(async (tx) => {
      await lockFor(own(tx), 'k');
      await tx.insertInto('items').values({ id: 1, name: 'by the holder', data: null }).execute();
      await holding;
    });
    await waitFor(
      'the holder to take the lock',
      async () => Number((await sql<{ n: string }>`select count(*) as n from pg_locks where locktype = 'advisory'`.execute(db)).rows[0]!.n) > 0,
    );
    const waiter = db.transaction().execute(async (tx) => {
      await lockFor(own(tx), 'k');
      return tx.selectFrom('items').selectAll().execute();
    });
    await waitFor(
      'the waiter to wait for the lock',
      async () => Number((await sql<{ n: string }>`select count(*) as n from pg_locks where locktype = 'advisory' and not granted`.execute(db)).rows[0]!.n) > 0,
    );
    release();
    await holder;
    assert.deepEqual(
      (await waiter).map((r) => r.name),
      ['by the holder'],
      'the read after the lock ran after the holder committed',
    );
  });
});
