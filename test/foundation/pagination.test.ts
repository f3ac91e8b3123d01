// Offset pagination: the {data,total,offset,limit} envelope, the default and bounds of limit and
// offset, and windows that are stable, disjoint and together cover every item in order (also
// deep in a long list, where pages start from bookmarks).
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { paginate } from '../../src/shared/pagination.js';
import { contentVersion, contentVersionOfTurn } from '../../src/shared/db/content-version.js';
import { expectError } from '../helpers/util.js';

const COUNT = 30;

type Item = { id: string; created_at: string; display_name: string };

for (const kind of DB_KINDS) {
  describe(`pagination [${kind}]`, { skip: await skipUnless(kind) }, () => {
    let token: string;
    let all: Item[];

    const s = useServer({ db: kind, rateLimits: { general_write: 1000, read: 1000 } });
    before(async () => {
      ({ token } = await s.newCompany());
      for (let i = 0; i < COUNT; i++) {
        const r = await s.post('/projects', { display_name: `page ${String(i).padStart(2, '0')}` }, { token });
        assert.equal(r.status, 201);
      }
      const r = await s.get('/projects?limit=100', { token });
      assert.equal(r.status, 200);
      all = r.body.data;
    });

    it('lists every item in a stable (created_at, id) order', async () => {
      assert.equal(all.length, COUNT);
      for (let i = 1; i < all.length; i++) {
        const [a, b] = [all[i - 1]!, all[i]!];
        assert.ok(
          a.created_at < b.created_at || (a.created_at === b.created_at && a.id < b.id),
          `order at ${i}: ${a.created_at}/${a.id} then ${b.created_at}/${b.id}`,
        );
      }
      assert.deepEqual(
        all.map((p) => p.display_name).sort(),
        Array.from({ length: COUNT }, (_, i) => `page ${String(i).padStart(2, '0')}`),
        'every created project is listed once',
      );
      const again = await s.get('/projects?limit=100', { token });
      assert.deepEqual(again.body.data, all, 'the same request gives the same page');
    });

    it('defaults to limit 25 and offset 0', async () => {
      const r = await s.get('/projects', { token });
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.body).sort(), ['data', 'limit', 'offset', 'total']);
      assert.equal(r.body.limit, 25);
      assert.equal(r.body.offset, 0);
      assert.equal(r.body.total, COUNT);
      assert.deepEqual(r.body.data, all.slice(0, 25));
    });

    it('limit/offset windows are disjoint and together cover all items in order', async () => {
      for (const limit of [1, 7, 10, 25, 30, 100]) {
        const seen: Item[] = [];
        for (let offset = 0; offset < COUNT; offset += limit) {
          const r = await s.get(`/projects?limit=${limit}&offset=${offset}`, { token });
          assert.equal(r.status, 200);
          assert.equal(r.body.limit, limit);
          assert.equal(r.body.offset, offset);
          assert.equal(r.body.total, COUNT);
          assert.equal(r.body.data.length, Math.min(limit, COUNT - offset));
          seen.push(...r.body.data);
        }
        assert.deepEqual(seen, all, `limit ${limit}: windows cover every item once, in order`);
      }
      // An arbitrary window equals the same slice of the full list.
      const w = await s.get('/projects?limit=4&offset=13', { token });
      assert.deepEqual(w.body.data, all.slice(13, 17));
    });

    it('an offset beyond the total gives an empty page with the correct total', async () => {
      for (const offset of [COUNT, COUNT + 1, 10000]) {
        const r = await s.get(`/projects?offset=${offset}`, { token });
        assert.equal(r.status, 200);
        assert.deepEqual(r.body, { data: [], total: COUNT, offset, limit: 25 });
      }
    });

    it('limit and offset outside their ranges, or not integers, are a 400', async () => {
      for (const q of ['limit=101', 'limit=0', 'limit=-1', 'offset=10001', 'offset=-1', 'limit=abc', 'offset=abc', 'limit=2.5', 'limit=']) {
        const r = await s.get(`/projects?${q}`, { token });
        expectError(r, 400);
        assert.match(r.body.message, /does not match the schema/, q);
        assert.ok(
          r.body.data.issues.some((i: { path: string }) => i.path === `query.${q.split('=')[0]}`),
          `${q}: ${r.text}`,
        );
      }
      // The bounds themselves are accepted.
      for (const q of ['limit=1', 'limit=100', 'offset=0', 'offset=10000']) assert.equal((await s.get(`/projects?${q}`, { token })).status, 200, q);
    });

    it('the envelope is the same on every list operation', async () => {
      const keys = await s.get('/api-keys?limit=1&offset=0', { token });
      assert.equal(keys.status, 200);
      assert.deepEqual(Object.keys(keys.body).sort(), ['data', 'limit', 'offset', 'total']);
      assert.equal(keys.body.limit, 1);
      assert.equal(keys.body.total, 1);
      assert.equal(keys.body.data.length, 1);
      expectError(await s.get('/api-keys?limit=101', { token }), 400);
    });

    /** A new company with three projects (`${prefix} 0` to 2), and a query builder that counts the statements it runs. */
    async function threeProjects(prefix: string) {
      const { token: own, companyId } = await s.newCompany();
      for (let i = 0; i < 3; i++) assert.equal((await s.post('/projects', { display_name: `${prefix} ${i}` }, { token: own })).status, 201);
      const ran = { queries: 0 };
      const counting = s.app.database.db.withPlugin({
        transformQuery: (a) => a.node,
        transformResult: async (a) => (ran.queries++, a.result),
      });
      return { own, companyId, counting, ran };
    }

    it('a list without kept counts reads its page and total in one query; an empty page asks for the count alone', async () => {
      const { own, companyId, counting, ran } = await threeProjects('carried');
      // Not `counted`: the page of any query, its total counted with it.
      const read = (offset: number) => paginate(counting.selectFrom('projects').selectAll().where('company_id', '=', companyId), { limit: 2, offset });
      const names = (p: { data: { display_name: string }[] }) => p.data.map((r) => r.display_name);
      const listed = names((await s.get('/projects', { token: own })).body);
      const first = await read(0);
      assert.deepEqual([first.total, names(first), ran.queries], [3, listed.slice(0, 2), 1]);
      assert.ok(!first.data.some((r) => Object.keys(r).some((k) => k.startsWith('__'))), 'the carried count is not in the rows');
      const second = await read(2);
      assert.deepEqual([second.total, names(second), ran.queries], [3, listed.slice(2), 2]);
      const empty = await read(3);
      assert.deepEqual([empty.total, empty.data, ran.queries], [3, [], 4]);
    });

    if (kind === 'postgres')
      it('on PostgreSQL, identical page reads made in the same turn of the event loop share one query', async () => {
        // Counted as they run (a shallow page's statement is compiled once, not built per read).
        const { own, companyId, counting, ran } = await threeProjects('gathered');
        const columns = ['id', 'display_name'] as const;
        const read = () =>
          paginate(() => counting.selectFrom('projects').select(columns).where('company_id', '=', companyId), { limit: 25, offset: 0 }, undefined, {
            tx: counting,
            table: 'projects',
            companyId,
            columns,
          });
        const pages = await Promise.all(Array.from({ length: 5 }, read));
        assert.equal(ran.queries, 1, 'one query for the five reads');
        assert.equal(pages[0]!.total, 3);
        for (const p of pages) assert.equal(p, pages[0], 'one shared result');
        // A read after they were answered is a query of its own (it sees what committed since).
        assert.equal((await s.post('/projects', { display_name: 'gathered 3' }, { token: own })).status, 201);
        assert.equal((await read()).total, 4);
        assert.equal(ran.queries, 2);
      });

    if (kind === 'sqlite')
      it("on SQLite, the reads of one turn share one read of other connections' commits, made after all of them arrived", async () => {
        const db = s.app.database.db;
        const other = new SQLite(join(s.app.config.dataDir, 'slipway.db'));
        // A commit that changes a row (one that changes nothing commits nothing).
        const touch = 'UPDATE list_counts SET version = version + 1 WHERE rowid = (SELECT min(rowid) FROM list_counts)';
        try {
          const before = contentVersion(db);
          assert.equal(await contentVersionOfTurn(db), before, 'nothing committed: the same version');
          // One read asks, another connection commits, a second read asks, all in the same turn.
          const first = contentVersionOfTurn(db)!;
          other.prepare(touch).run();
          const second = contentVersionOfTurn(db)!;
          const [a, b] = await Promise.all([first, second]);
          assert.equal(a, b, 'one version for the turn');
          assert.notEqual(a, before, 'read after the commit that came before the second read');
          assert.equal(a, contentVersion(db));
          // A later turn reads again: a commit in between is seen.
          other.prepare(touch).run();
          const later = await contentVersionOfTurn(db);
          assert.notEqual(later, a);
          // This process's own writes count when each reader resumes, not when the turn's read was made.
          const pending = contentVersionOfTurn(db)!;
          await sql.raw(touch).execute(db);
          assert.notEqual(await pending, later);
        } finally {
          other.close();
        }
      });

    if (kind === 'postgres')
      it('on PostgreSQL, creates and deletes append deltas that are folded into the list count as they go; totals stay exact', async () => {
        const { token: own, companyId } = await s.newCompany();
        const db = s.app.database.db;
        const counts = async () => {
          const r = await sql<{ base: string | null; deltas: string; sum: string | null }>`
          SELECT (SELECT n FROM list_counts WHERE tbl = 'projects' AND company_id = ${companyId}) AS base,
                 (SELECT count(*) FROM list_count_deltas WHERE tbl = 'projects' AND company_id = ${companyId}) AS deltas,
                 (SELECT sum(delta) FROM list_count_deltas WHERE tbl = 'projects' AND company_id = ${companyId}) AS sum`.execute(db);
          const row = r.rows[0]!;
          return { base: Number(row.base ?? 0), deltas: Number(row.deltas), sum: Number(row.sum ?? 0) };
        };
        const total = async () => (await s.get('/projects', { token: own })).body.total as number;
        const made: string[] = [];
        for (let i = 0; i < 70; i++) made.push((await s.post('/projects', { display_name: `delta ${i}` }, { token: own })).body.id);
        let c = await counts();
        // One in 8 deltas folds its list (sequential creates never find the fold taken).
        assert.ok(c.deltas < 8, `deltas folded as they go (${c.deltas} left)`);
        assert.ok(c.base >= 62, `the folded ones are in the list's row (${c.base})`);
        assert.equal(c.base + c.sum, 70);
        assert.equal(await total(), 70);
        // Concurrent creates and deletes: no lost or doubled count.
        const results = await Promise.all([
          ...Array.from({ length: 40 }, (_, i) => s.post('/projects', { display_name: `concurrent ${i}` }, { token: own })),
          ...made.slice(0, 20).map((id) => s.delete(`/projects/${id}`, { token: own })),
        ]);
        assert.deepEqual(new Set(results.map((r) => r.status)), new Set([201, 200]));
        c = await counts();
        assert.equal(c.base + c.sum, 90);
        assert.equal(await total(), 90);
        const rows = await sql<{ n: string }>`SELECT count(*) AS n FROM projects WHERE company_id = ${companyId}`.execute(db);
        assert.equal(Number(rows.rows[0]!.n), 90);
      });

    it('a page read again and again follows every change: creation, rename, deletion, and a write by another connection', async () => {
      const { token: own } = await s.newCompany();
      const names = async () => {
        const r = await s.get('/projects', { token: own });
        assert.equal(r.status, 200);
        return { total: r.body.total, names: r.body.data.map((p: Item) => p.display_name) };
      };
      const a = (await s.post('/projects', { display_name: 'first' }, { token: own })).body as Item;
      assert.deepEqual(await names(), { total: 1, names: ['first'] });
      assert.deepEqual(await names(), { total: 1, names: ['first'] });
      const b = (await s.post('/projects', { display_name: 'second' }, { token: own })).body as Item;
      assert.deepEqual(await names(), { total: 2, names: ['first', 'second'] });
      assert.equal((await s.patch(`/projects/${a.id}`, { display_name: 'renamed' }, { token: own })).status, 200);
      assert.deepEqual(await names(), { total: 2, names: ['renamed', 'second'] });
      assert.equal((await s.delete(`/projects/${b.id}`, { token: own })).status, 200);
      assert.deepEqual(await names(), { total: 1, names: ['renamed'] });
      if (kind === 'sqlite') {
        // Another process writing the same file (e.g. an admin command) is seen too.
        const other = new SQLite(join(s.app.config.dataDir, 'slipway.db'));
        other.prepare('UPDATE projects SET display_name = ? WHERE id = ?').run('changed elsewhere', a.id);
        other.close();
        assert.deepEqual(await names(), { total: 1, names: ['changed elsewhere'] });
      }
    });

    it('while many clients poll a list at once, a read made after a write always includes it', async () => {
      // Identical concurrent reads share one query (PostgreSQL) or one cached page (SQLite); a
      // read must never be answered by a query that began before it was made.
      const { token: own } = await s.newCompany();
      let polling = true;
      const pollers = Array.from({ length: 8 }, async () => {
        while (polling) assert.equal((await s.get('/projects', { token: own })).status, 200);
      });
      try {
        for (let i = 1; i <= 25; i++) {
          const created = await s.post('/projects', { display_name: `polled ${i}` }, { token: own });
          assert.equal(created.status, 201);
          const r = await s.get('/projects', { token: own });
          assert.equal(r.body.total, i, `total after write ${i}`);
          assert.ok(
            r.body.data.some((p: Item) => p.id === created.body.id),
            `write ${i} is in the page`,
          );
        }
      } finally {
        polling = false;
        await Promise.all(pollers);
      }
    });

    it('deep offsets of a long list: the same pages, totals and order as a scan, before and after rows come and go', async () => {
      // 1,200 projects written straight to the database (the triggers count them), in groups that
      // share a created_at, so the id decides within a group; listed 100 at a time.
      const { companyId, token: own } = await s.newCompany();
      const db = s.app.database.db;
      const rows = Array.from({ length: 1200 }, (_, i) => {
        const at = new Date(Date.UTC(2030, 0, 1, 0, 0, Math.floor(i / 7))).toISOString();
        return { id: randomUUID() as string, company_id: companyId, name: `deep-${i}`, display_name: `Deep ${i}`, created_at: at, updated_at: at };
      });
      for (let i = 0; i < rows.length; i += 200)
        await db
          .insertInto('projects')
          .values(rows.slice(i, i + 200))
          .execute();
      const expected = (list: typeof rows) =>
        [...list].sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1));
      const check = async (list: typeof rows) => {
        const want = expected(list).map((r) => r.id);
        for (const offset of [0, 249, 250, 251, 499, 500, 777, 1000, 1099, want.length - 1, want.length, 1300]) {
          const r = await s.get(`/projects?limit=100&offset=${offset}`, { token: own });
          assert.equal(r.status, 200);
          assert.equal(r.body.total, want.length, `total at offset ${offset}`);
          assert.deepEqual(
            r.body.data.map((p: Item) => p.id),
            want.slice(offset, offset + 100),
            `page at offset ${offset}`,
          );
        }
      };
      await check(rows);
      // Removing and adding rows changes what every deep page holds.
      const gone = new Set(rows.filter((_, i) => i % 5 === 0).map((r) => r.id));
      await db
        .deleteFrom('projects')
        .where('id', 'in', [...gone])
        .execute();
      const kept = rows.filter((r) => !gone.has(r.id));
      const added = (await s.post('/projects', { display_name: 'Newest' }, { token: own })).body as Item;
      await check([...kept, { ...added, company_id: companyId, name: 'newest', updated_at: added.created_at }]);
    });

    it(
      'a create does not wait for another uncommitted create in the same company, and the counts stay exact (PostgreSQL)',
      { skip: kind !== 'postgres' },
      async () => {
        const { companyId, token: own } = await s.newCompany();
        const db = s.app.database.db;
        const now = new Date().toISOString();
        const held = { id: randomUUID(), company_id: companyId, name: 'held', display_name: 'Held', created_at: now, updated_at: now };
        await db.transaction().execute(async (tx) => {
          await tx.insertInto('projects').values(held).execute();
          // Counted at the commit, the list's counts row is not locked by this open insert: with a
          // count taken at the insert, the request below waited for this transaction to end.
          const created = await Promise.race([
            s.post('/projects', { display_name: 'Alongside' }, { token: own }),
            new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the create waited for the open transaction')), 5000)),
          ]);
          assert.equal(created.status, 201);
        });
        const creates = await Promise.all(Array.from({ length: 20 }, (_, i) => s.post('/projects', { display_name: `Together ${i}` }, { token: own })));
        assert.deepEqual(new Set(creates.map((r) => r.status)), new Set([201]));
        await db.deleteFrom('projects').where('id', '=', held.id).execute();
        const r = await s.get('/projects?limit=100', { token: own });
        assert.equal(r.body.total, 21);
        assert.equal(r.body.data.length, 21);
        assert.ok(!r.body.data.some((p: Item) => p.id === held.id));
      },
    );
  });
}
