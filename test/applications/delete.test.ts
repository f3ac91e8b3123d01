// Deleting an application: allowed at any moment of its life (running deployments are cancelled
// first), goes through `deleting`, then removes the application's processes, variables,
// deployments and logs; afterwards every read of it is 404. The teardown is held in place with
// the `app_delete` progression (reads mode: nothing reads a deletion, so it waits) and released
// with `immediate`.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll, waitFor } from '../helpers/util.js';
import {
  IMMEDIATE_ENV,
  addFault,
  appPath,
  createApp,
  deploy,
  deploymentLogs,
  deploymentPath,
  deploymentsPath,
  readDeployment,
  setProgression,
  trigger,
} from './support.js';
import { PROCESS_RESOURCE_TYPES } from '../../src/modules/resources/catalog.js';

for (const kind of DB_KINDS) {
  describe(`applications: delete [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    const holdDeletion = () => setProgression(s, 'app_delete', { mode: 'reads', reads: 1 });
    const releaseDeletion = () => setProgression(s, 'app_delete', { mode: 'immediate' });

    /** Rows the application still owns, straight from the database. */
    async function owned(appId: string) {
      const db = s.app.database.db;
      const count = async (table: 'processes' | 'env_vars' | 'deployments' | 'runtime_logs' | 'applications', column: 'app_id' | 'id' = 'app_id') =>
        Number(
          (
            await db
              .selectFrom(table)
              .select((eb) => eb.fn.countAll().as('n'))
              .where(column, '=', appId)
              .executeTakeFirst()
          )?.n ?? 0,
        );
      return {
        application: await count('applications', 'id'),
        processes: await count('processes'),
        env_vars: await count('env_vars'),
        deployments: await count('deployments'),
        logs: await count('runtime_logs'),
      };
    }

    async function withContent(appKind: 'git' | 'image' = 'image') {
      const a = await createApp(s, { kind: appKind });
      expectStatus(await s.post(`${appPath(a.id)}/env-vars`, { key: 'SECRET', value: 'v' }), 201);
      const w = expectStatus(
        await s.post(`${appPath(a.id)}/processes`, {
          display_name: 'worker',
          type: 'worker',
          resource_type_id: PROCESS_RESOURCE_TYPES[0]!.id,
          scaling_strategy: { type: 'manual', config: { instanceCount: 1 } },
        }),
        200,
      );
      const web = (await listAll(s, `${appPath(a.id)}/processes`)).find((p) => p.type === 'web');
      const v = (await listAll(s, `${appPath(a.id)}/env-vars`))[0];
      return { a, worker: w, web, variable: v };
    }

    it('delete of an idle application: 200, status deleting, then 404 everywhere; processes, variables, deployments gone', async () => {
      await setProgression(s, 'deployment', { mode: 'immediate' });
      await holdDeletion();
      const { a, worker, variable } = await withContent();
      const d = await deploy(s, a.id);
      const del = expectStatus(await s.delete(appPath(a.id)), 200);
      assert.equal(typeof del.message, 'string');
      assert.equal(expectStatus(await s.get(appPath(a.id)), 200).status, 'deleting');
      assert.equal((await listAll(s, '/applications')).find((x) => x.id === a.id)?.status, 'deleting', 'listed as deleting');
      await releaseDeletion();
      await waitFor('the application to be gone', async () => (await s.get(appPath(a.id))).status === 404);
      expectError(await s.get(appPath(a.id)), 404);
      expectError(await s.get(`${appPath(a.id)}/env-vars`), 404);
      expectError(await s.get(`${appPath(a.id)}/processes`), 404);
      expectError(await s.get(`${appPath(a.id)}/processes/${worker.id}`), 404);
      expectError(await s.put(`${appPath(a.id)}/env-vars/${variable.id}`, { value: 'x' }), 404);
      expectError(await s.get(deploymentsPath(a.id)), 404);
      expectError(await s.get(deploymentPath(a.id, d.id)), 404);
      expectError(await s.delete(appPath(a.id)), 404);
      assert.ok(!(await listAll(s, '/applications')).some((x) => x.id === a.id));
      assert.deepEqual(await owned(a.id), { application: 0, processes: 0, env_vars: 0, deployments: 0, logs: 0 });
    });

    it('delete during an in-progress deployment: the deployment ends cancelled, the app goes deleting then 404, its variables and processes are gone', async () => {
      await setProgression(s, 'deployment', { mode: 'reads', reads: 5 });
      await holdDeletion();
      const { a, worker, web, variable } = await withContent('git');
      const running = await trigger(s, a.id);
      const queued = await trigger(s, a.id);
      assert.equal(running.status, 'inProgress');
      assert.equal(queued.status, 'waiting');
      expectStatus(await s.delete(appPath(a.id)), 200);

      // While the teardown runs the application and its deployments can still be read.
      assert.equal(expectStatus(await s.get(appPath(a.id)), 200).status, 'deleting');
      const cancelled = await readDeployment(s, a.id, running.id);
      assert.equal(cancelled.status, 'cancelled');
      assert.ok(cancelled.finished_at);
      assert.equal((await readDeployment(s, a.id, queued.id)).status, 'cancelled', 'waiting work is cancelled too');
      const messages = (await deploymentLogs(s, a.id, running.id)).map((l) => l.message);
      assert.ok(
        messages.some((m) => /being deleted/i.test(m)),
        messages.join('\n'),
      );
      // Reads no longer advance the cancelled deployment, and nothing new can start.
      for (let i = 0; i < 6; i++) assert.equal((await readDeployment(s, a.id, running.id)).status, 'cancelled');
      expectError(await s.post(deploymentsPath(a.id), {}), 400, /deleted/i);
      expectError(await s.patch(appPath(a.id), { display_name: 'too late' }), 400, /deleted/i);
      expectError(await s.post(`${appPath(a.id)}/clone`, { display_name: 'too late' }), 400, /deleted/i);
      // Deleting again while it is deleting is accepted and changes nothing.
      expectStatus(await s.delete(appPath(a.id)), 200);

      await releaseDeletion();
      await waitFor('the application to be gone', async () => (await s.get(appPath(a.id))).status === 404);
      expectError(await s.get(`${appPath(a.id)}/env-vars`), 404);
      expectError(await s.get(`${appPath(a.id)}/processes/${worker.id}`), 404);
      expectError(await s.get(`${appPath(a.id)}/processes/${web.id}`), 404);
      expectError(await s.delete(`${appPath(a.id)}/env-vars/${variable.id}`), 404);
      expectError(await s.get(deploymentPath(a.id, running.id)), 404);
      assert.deepEqual(await owned(a.id), { application: 0, processes: 0, env_vars: 0, deployments: 0, logs: 0 });
    });

    it('delete right after creation (no deployment yet) and right after a trigger both complete', async () => {
      await setProgression(s, 'deployment', { mode: 'immediate' });
      await releaseDeletion();
      const fresh = await createApp(s);
      expectStatus(await s.delete(appPath(fresh.id)), 200);
      const busy = await createApp(s);
      await trigger(s, busy.id);
      expectStatus(await s.delete(appPath(busy.id)), 200);
      for (const id of [fresh.id, busy.id]) {
        await waitFor(`application ${id} to be gone`, async () => (await s.get(appPath(id))).status === 404);
        assert.deepEqual(await owned(id), { application: 0, processes: 0, env_vars: 0, deployments: 0, logs: 0 });
      }
    });

    it('a failed teardown (fault rule) leaves appDeletionFailed; deleting again completes', async () => {
      await releaseDeletion();
      const { a } = await withContent();
      await addFault(s, { operation: 'app_delete', target_id: a.id, remaining: 1, message: 'Volume detach timed out' });
      expectStatus(await s.delete(appPath(a.id)), 200);
      const failed = await waitFor('appDeletionFailed', async () => {
        const g = expectStatus(await s.get(appPath(a.id)), 200);
        return g.status === 'appDeletionFailed' ? g : undefined;
      });
      assert.equal(failed.status, 'appDeletionFailed');
      const logs = expectStatus(await s.get(`/applications/${a.id}/runtime-logs?filters=detach`), 200);
      assert.ok(logs.some((l: { message: string }) => l.message.includes('Volume detach timed out')));
      expectStatus(await s.delete(appPath(a.id)), 200);
      await waitFor('the application to be gone', async () => (await s.get(appPath(a.id))).status === 404);
      assert.deepEqual(await owned(a.id), { application: 0, processes: 0, env_vars: 0, deployments: 0, logs: 0 });
    });

    it('delete of an unknown application is 404', async () => {
      expectError(await s.delete(appPath('0d3c2b1a-9e8f-4a7b-8c6d-5e4f3a2b1c0d')), 404);
    });
  });
}
