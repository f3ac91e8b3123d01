// PostgreSQL connections opened by the server's database layer (src/shared/db/index.ts) run every
// prepared statement on its generic plan, never planning it anew for each execution's values; the
// operator's PGOPTIONS still apply after that option.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { connectionOptions, type Database } from '../../src/shared/db/index.js';
import { openScratchDatabase, skipUnless } from '../helpers/server.js';

describe('PostgreSQL plan cache', async () => {
  const skip = await skipUnless('postgres');
  let database: Database;
  let cleanup: (() => Promise<void>) | undefined;

  before(async () => {
    if (skip) return;
    ({ database, cleanup } = await openScratchDatabase('postgres', 'plans-'));
    await sql`CREATE TABLE items (id integer PRIMARY KEY, kind text NOT NULL)`.execute(database.db);
    await sql`CREATE INDEX items_kind ON items (kind)`.execute(database.db);
    // Skewed values: a plan for a given value would differ from the generic one, which is what
    // makes PostgreSQL's default mode keep planning per execution.
    await sql`INSERT INTO items SELECT i, CASE WHEN i % 1000 = 0 THEN 'rare' ELSE 'common' END FROM generate_series(1, 20000) i`.execute(database.db);
    await sql`ANALYZE items`.execute(database.db);
  });
  after(async () => {
    await database?.close();
    await cleanup?.();
  });

  it('plans a statement once for every later execution on a connection', { skip }, async () => {
    const counts = await database.db.connection().execute(async (db) => {
      assert.equal((await sql<{ plan_cache_mode: string }>`SHOW plan_cache_mode`.execute(db)).rows[0]!.plan_cache_mode, 'force_generic_plan');
      for (let i = 0; i < 8; i++) {
        const kind = i % 2 ? 'rare' : 'common';
        const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM items WHERE kind = ${kind}`.execute(db);
        assert.equal(r.rows[0]!.n, kind === 'rare' ? 20 : 19980);
      }
      return (
        await sql<{ generic_plans: number; custom_plans: number }>`
          SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%FROM items WHERE kind = %'`.execute(db)
      ).rows;
    });
    assert.deepEqual(counts, [{ generic_plans: 8, custom_plans: 0 }]);
  });

  it('puts the operator PGOPTIONS after its own option, so theirs win', () => {
    assert.equal(connectionOptions({}), '-c plan_cache_mode=force_generic_plan');
    assert.equal(
      connectionOptions({ PGOPTIONS: '-c plan_cache_mode=auto -c work_mem=8MB' }),
      '-c plan_cache_mode=force_generic_plan -c plan_cache_mode=auto -c work_mem=8MB',
    );
  });
});
