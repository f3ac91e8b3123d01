// SQLite group commit (src/shared/db/group-commit.ts): transactions that end in the same turn of
// the event loop are committed together. Checked through a second connection to the same file,
// which sees only what is committed: none is reported done before its COMMIT, one that fails is
// rolled back alone, a read outside a transaction commits the open group first, and a COMMIT that
// fails fails the whole group and keeps none of it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import type { Database, Tx } from '../../src/shared/db/index.js';
import { loadConfig } from '../../src/shared/config.js';
import { openScratchDatabase } from '../helpers/server.js';

const items = (db: Tx) => db as unknown as { insertInto(t: string): any; selectFrom(t: string): any };

describe('SQLite group commit', () => {
  let database: Database;
  let cleanup: () => Promise<void>;
  let other: SQLite.Database;
  /** The names committed, as another connection sees them. */
  const committed = () => other.prepare('select name from items order by name').pluck().all() as string[];
  const insert = (tx: Tx, name: string, parent: number | null = null) => items(tx).insertInto('items').values({ name, parent }).execute();
  const transaction = (fn: (tx: Tx) => Promise<unknown>) => database.db.transaction().execute(fn);

  before(async () => {
    // Groups never grow old here (the default commits a group at the end of a transaction once
    // it is 20 ms old, which a loaded machine may take over one transaction): the groups these
    // tests make are the ones of the event loop's turns alone.
    ({ database, cleanup } = await openScratchDatabase('sqlite', 'slipway-group-commit-', { groupCommit: { maxAgeMs: 600_000 } }));
    await sql`create table parents (id integer primary key)`.execute(database.db);
    await sql`create table items (id integer primary key, name text not null unique, parent integer references parents (id) deferrable initially deferred)`.execute(
      database.db,
    );
    other = new SQLite(database.file!.name, { readonly: true });
  });

  after(async () => {
    other.close();
    await database.close();
    await cleanup();
  });

  it('answers a transaction only once the group it ended in is committed, with the ones after it', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let firstDone = false;
    const first = transaction((tx) => insert(tx, 'a1')).then(() => (firstDone = true));
    // Queued while the first runs: it joins the first's group and keeps it open until it ends.
    const second = transaction(async (tx) => {
      await insert(tx, 'a2');
      await held;
    });
    try {
      await sleep(30);
      assert.equal(firstDone, false, 'the first is not reported done while its group is open');
      assert.deepEqual(committed(), [], 'nothing is committed yet');
    } finally {
      // Also when an assertion failed: the held transaction would keep the database open forever.
      release();
    }
    await Promise.all([first, second]);
    assert.deepEqual(committed(), ['a1', 'a2']);
  });

  it('a group older than its age limit is committed when the transaction running in it ends', async () => {
    const { database: aged, cleanup: done } = await openScratchDatabase('sqlite', 'slipway-group-commit-aged-', { groupCommit: { maxAgeMs: 0 } });
    const reader = new SQLite(aged.file!.name, { readonly: true });
    const names = () => reader.prepare('select name from t order by name').pluck().all();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    try {
      await sql`create table t (name text)`.execute(aged.db);
      const run = (fn: (tx: Tx) => Promise<unknown>) => aged.db.transaction().execute(fn);
      const first = run((tx) => items(tx).insertInto('t').values({ name: 'f1' }).execute());
      // Queued behind the first: with a group of any age due, it does not hold the first's commit.
      const second = run(async (tx) => {
        await items(tx).insertInto('t').values({ name: 'f2' }).execute();
        await held;
      });
      // (Bounded: were the group not due, the first would wait for the second, held below.)
      assert.equal(await Promise.race([first.then(() => true), sleep(5000).then(() => false)]), true, 'the first is answered at once');
      assert.deepEqual(names(), ['f1'], 'the first is committed while the second is still open');
      release();
      await second;
      assert.deepEqual(names(), ['f1', 'f2']);
    } finally {
      release();
      reader.close();
      await aged.close();
      await done();
    }
  });

  it('rolls back only the transaction that fails, the others of its group committed', async () => {
    const results = await Promise.allSettled([
      transaction((tx) => insert(tx, 'b1')),
      transaction(async (tx) => {
        await insert(tx, 'b2');
        throw new Error('this one fails');
      }),
      transaction(async (tx) => {
        await insert(tx, 'b3');
        await insert(tx, 'b1'); // unique: fails after its first insert
      }),
      transaction((tx) => insert(tx, 'b4')),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
    );
    assert.match(String((results[1] as PromiseRejectedResult).reason), /this one fails/);
    assert.match(String((results[2] as PromiseRejectedResult).reason), /UNIQUE/);
    assert.deepEqual(
      committed().filter((n) => n.startsWith('b')),
      ['b1', 'b4'],
    );
  });

  it('commits the open group before a query outside a transaction runs', async () => {
    const written = transaction((tx) => insert(tx, 'c1'));
    // Queued behind the transaction; when it runs, the transaction has ended but its group is open.
    const read = items(database.db).selectFrom('items').select('name').where('name', '=', 'c1').execute();
    const rows = await read;
    assert.deepEqual(rows, [{ name: 'c1' }]);
    assert.deepEqual(
      committed().filter((n) => n.startsWith('c')),
      ['c1'],
      'what the read saw was committed',
    );
    await written;
  });

  it('keeps the savepoint journals of a group in memory and rolls a large failed transaction back alone', async () => {
    // Past 64 KiB a savepoint's journal would otherwise spill to a temporary file (a pwrite per page).
    assert.equal(database.file!.pragma('temp_store', { simple: true }), 2);
    const big = 'x'.repeat(2000);
    const results = await Promise.allSettled([
      transaction((tx) => Promise.all(Array.from({ length: 200 }, (_, i) => insert(tx, `kept ${String(i).padStart(3, '0')} ${big}`)))),
      transaction(async (tx) => {
        for (let i = 0; i < 200; i++) await insert(tx, `undone ${i} ${big}`);
        throw new Error('fails after writing about 400 pages');
      }),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected'],
    );
    const names = committed();
    assert.equal(names.filter((n) => n.startsWith('kept ')).length, 200);
    assert.equal(names.filter((n) => n.startsWith('undone ')).length, 0);
  });

  it('commits many queued transactions, every one of them answered', async () => {
    const names = Array.from({ length: 150 }, (_, i) => `d${String(i).padStart(3, '0')}`);
    await Promise.all(names.map((n) => transaction((tx) => insert(tx, n))));
    assert.deepEqual(
      committed().filter((n) => n.startsWith('d')),
      names,
    );
  });

  it('fails every transaction of a group whose COMMIT fails and keeps none of their changes', async () => {
    await sql`insert into parents (id) values (1)`.execute(database.db);
    const results = await Promise.allSettled([
      transaction((tx) => insert(tx, 'e1', 1)),
      // A deferred foreign key is checked at COMMIT: this one fails the group's commit.
      transaction((tx) => insert(tx, 'e2', 99)),
      transaction((tx) => insert(tx, 'e3', 1)),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'rejected', 'rejected'],
    );
    for (const r of results) assert.match(String((r as PromiseRejectedResult).reason), /FOREIGN KEY/);
    assert.deepEqual(
      committed().filter((n) => n.startsWith('e')),
      [],
    );
    // The connection is usable again.
    await transaction((tx) => insert(tx, 'e4', 1));
    assert.deepEqual(
      committed().filter((n) => n.startsWith('e')),
      ['e4'],
    );
  });
});

describe('SQLite group commit: the setting', () => {
  it('is on by default; SLIPWAY_SQLITE_GROUP_COMMIT=0 turns it off; another value is refused', () => {
    assert.equal(loadConfig({}, {}).sqliteGroupCommit, true);
    assert.equal(loadConfig({}, { SLIPWAY_SQLITE_GROUP_COMMIT: '1' }).sqliteGroupCommit, true);
    assert.equal(loadConfig({}, { SLIPWAY_SQLITE_GROUP_COMMIT: '0' }).sqliteGroupCommit, false);
    assert.throws(() => loadConfig({}, { SLIPWAY_SQLITE_GROUP_COMMIT: 'off' }), /SLIPWAY_SQLITE_GROUP_COMMIT must be 0 or 1/);
  });

  it('off: each transaction is committed as it ends', async () => {
    const { database: db, cleanup: done } = await openScratchDatabase('sqlite', 'slipway-group-commit-off-', { groupCommit: false });
    let release = () => {};
    let reader: SQLite.Database | undefined;
    try {
      await sql`create table t (name text)`.execute(db.db);
      const opened = (reader = new SQLite(db.file!.name, { readonly: true }));
      let seen: string[] = [];
      const held = new Promise<void>((r) => (release = r));
      const first = db.db.transaction().execute((tx) => items(tx).insertInto('t').values({ name: 'x' }).execute());
      const second = db.db.transaction().execute(async () => {
        // Runs after the first ended: with group commit off, the first is committed already.
        seen = opened.prepare('select name from t').pluck().all() as string[];
        await held;
      });
      await first;
      release();
      await second;
      assert.deepEqual(seen, ['x']);
    } finally {
      // Released and closed even when an assertion failed, so close() below does not wait for ever.
      release();
      reader?.close();
      await db.close();
      await done();
    }
  });
});
