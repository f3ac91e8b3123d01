// After-commit work (src/shared/db/after-commit.ts) runs for every transaction of the database,
// not only those of a request or a job: registered in a transaction, it runs once that committed
// and before `execute` resolves; a transaction that rolled back drops it. (Work registered in a
// transaction nobody ran it for used to be lost: e.g. the edge never told a hostname was removed.)
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Database } from '../../src/shared/db/index.js';
import { afterCommit } from '../../src/shared/db/after-commit.js';
import { DB_KINDS, openScratchDatabase, skipUnless } from '../helpers/server.js';

for (const kind of DB_KINDS) {
  describe(`after-commit work (${kind})`, { skip: await skipUnless(kind) }, () => {
    let database: Database;
    let cleanup: () => Promise<void>;
    before(async () => {
      ({ database, cleanup } = await openScratchDatabase(kind, 'slipway-after-commit-'));
    });
    after(() => cleanup());

    it('runs once the transaction committed, before execute resolves, seeing the commit', async () => {
      const db = database.db;
      let seen: unknown = 'not run';
      const result = await db.transaction().execute(async (tx) => {
        await sql`create table after_commit_probe (v integer)`.execute(tx);
        await sql`insert into after_commit_probe (v) values (7)`.execute(tx);
        afterCommit(tx, async () => {
          seen = (await sql<{ v: number }>`select v from after_commit_probe`.execute(db)).rows[0]?.v;
        });
        return 'done';
      });
      assert.equal(result, 'done');
      assert.equal(seen, 7, 'the work ran, after the commit, before execute resolved');
    });

    it('runs for a transaction with an isolation level too, and is dropped with a rollback', async () => {
      const db = database.db;
      let runs = 0;
      if (kind === 'postgres') {
        await db
          .transaction()
          .setIsolationLevel('serializable')
          .execute(async (tx) => afterCommit(tx, () => runs++));
        assert.equal(runs, 1);
      }
      await assert.rejects(
        db.transaction().execute(async (tx) => {
          afterCommit(tx, () => (runs += 100));
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      assert.ok(runs < 100, 'work of a rolled-back transaction does not run');
    });
  });
}
