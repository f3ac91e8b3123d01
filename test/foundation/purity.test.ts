// Operation.pure is checked, not promised: with SLIPWAY_CHECK_PURE=1 (test/run.mjs sets it for
// every suite) a pure handler that writes, enqueues a job or emits fails its request with a 500,
// and what it tried is not kept. Here a pure operation's handler is made to misbehave on purpose.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { modules } from '../../src/modules/index.js';
import type { Operation } from '../../src/shared/http/operation.js';
import { checkingPurity } from '../../src/shared/purity.js';
import { enqueue } from '../../src/shared/jobs.js';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';

const listProjects = modules.flatMap((m) => m.operations).find((o) => o.contract.operationId === 'listProjectsV3') as Operation;
const honest = listProjects.handler;
const now = () => new Date().toISOString();

for (const kind of DB_KINDS) {
  describe(`pure operations are checked (${kind})`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind });
    let misbehave: ((r: any) => Promise<void>) | null = null;
    before(() => {
      assert.ok(listProjects.pure, 'listProjects is flagged pure');
      listProjects.handler = async (r) => {
        await misbehave?.(r);
        return honest(r);
      };
    });
    after(() => {
      listProjects.handler = honest;
    });

    it('runs with the check on', () => assert.equal(checkingPurity, true, 'test/run.mjs sets SLIPWAY_CHECK_PURE=1'));

    it('an honest pure read answers as usual', async () => {
      misbehave = null;
      expectStatus(await s.get('/projects'), 200);
    });

    it('a pure read that writes fails, and its write is not kept', async () => {
      const before = (await s.app.database.db.selectFrom('projects').select('id').execute()).length;
      misbehave = async (r) => {
        await r.tx
          .insertInto('projects')
          .values({ id: crypto.randomUUID(), company_id: r.companyId, name: 'impure', display_name: 'impure', created_at: now(), updated_at: now() })
          .execute();
      };
      const res = await s.get('/projects');
      assert.equal(res.status, 500);
      const after = (await s.app.database.db.selectFrom('projects').select('id').execute()).length;
      assert.equal(after, before);
    });

    it('a pure read that enqueues a job or emits an event fails', async () => {
      misbehave = async (r) => void (await enqueue(r.tx, { kind: 'cron.tick', payload: {} as never }));
      assert.equal((await s.get('/projects')).status, 500);
      misbehave = async (r) => void (await r.app.events.record(r.tx, 'APP_UPDATE', r.companyId, {}));
      assert.equal((await s.get('/projects')).status, 500);
      misbehave = null;
      expectStatus(await s.get('/projects'), 200);
    });
  });
}
