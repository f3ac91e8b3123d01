// Processes over HTTP: the default web process, CRUD, the one-web and key rules, validation of
// cron settings, metrics shapes, permissions (roles, scoped keys), tenancy, clone and app deletion,
// and the rate tiers (general_write for changes, logs for exit codes).
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, MISSING, UUID_RE, waitFor, whileRowsHeld } from '../helpers/util.js';
import { SCHEMA_MISMATCH } from '../accounts/support.js';
import { CRON_FIELDS, MANUAL_1, PROCESS_FIELDS, RT, createApp, createProcess, cron, deploy, processPath, processesPath } from './support.js';

const METRICS = ['cpu-usage', 'cpu-limit', 'memory-usage', 'memory-limit', 'instance-count'] as const;

for (const kind of DB_KINDS) {
  describe(`processes [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: { SLIPWAY_SIM_PROGRESSION: 'deployment=immediate,cron=duration:300' } });

    it('an update writes only what it changes: a rollout or cron token committed meanwhile stays (PostgreSQL)', { skip: kind !== 'postgres' }, async () => {
      const app = await createApp(s);
      const web = expectStatus(await s.get(processesPath(app)), 200).data[0];
      const db = s.app.database.db;
      const at = new Date().toISOString();
      // Another writer holds the row with changes the update will not have read.
      const patched = await whileRowsHeld(
        s,
        (tx) => tx.updateTable('processes').set({ rolled_out_at: at, cron_token: 'held' }).where('id', '=', web.id).execute(),
        () => s.patch(processPath(app, web.id), { display_name: 'Renamed meanwhile' }),
      );
      assert.equal(expectStatus(patched, 200).display_name, 'Renamed meanwhile');
      const row = await db.selectFrom('processes').select(['display_name', 'rolled_out_at', 'cron_token']).where('id', '=', web.id).executeTakeFirstOrThrow();
      assert.deepEqual(row, { display_name: 'Renamed meanwhile', rolled_out_at: at, cron_token: 'held' });
    });

    describe('the default web process', () => {
      it('is created with the application: key web, port 8080, one manual instance, a standard size', async () => {
        const app = await createApp(s);
        const l = expectStatus(await s.get(processesPath(app)), 200);
        assert.equal(l.total, 1);
        assert.equal(l.offset, 0);
        assert.equal(l.limit, 25);
        const web = l.data[0];
        assert.deepEqual(Object.keys(web).sort(), PROCESS_FIELDS, 'non-cron processes carry no cron-only fields');
        assert.match(web.id, UUID_RE);
        assert.equal(web.app_id, app);
        assert.equal(web.key, 'web');
        assert.equal(web.type, 'web');
        assert.equal(web.entrypoint, '');
        assert.equal(web.port, 8080);
        assert.equal(web.is_ingress_enabled, true);
        assert.equal(web.ingress_protocol, 'http');
        assert.deepEqual(web.scaling_strategy, MANUAL_1);
        assert.equal(web.resource_type_id, RT.s1!.id);
        assert.equal(web.resource_type_name, 's1');
        assert.equal(web.cpu_limit, RT.s1!.cpu_limit);
        assert.equal(web.memory_limit, RT.s1!.memory_limit);
        assert.equal(web.schedule, null);
        assert.equal(web.time_zone, null);
        assert.equal(web.job_start_policy, null);
        assert.equal(typeof web.internal_hostname, 'string');
        assert.deepEqual(expectStatus(await s.get(processPath(app, web.id)), 200), web);
      });
    });

    describe('create, read, update, delete', () => {
      it('creates a worker, gets, lists, updates and deletes it', async () => {
        const app = await createApp(s);
        const w = await createProcess(s, app, { display_name: 'Queue Worker', type: 'worker', entrypoint: 'node worker.js', resource_type_id: RT.s2!.id });
        assert.deepEqual(Object.keys(w).sort(), PROCESS_FIELDS);
        assert.equal(w.key, 'queue-worker');
        assert.equal(w.type, 'worker');
        assert.equal(w.display_name, 'Queue Worker');
        assert.equal(w.entrypoint, 'node worker.js');
        assert.equal(w.port, null);
        assert.equal(w.internal_hostname, null);
        assert.equal(w.is_ingress_enabled, false);
        assert.equal(w.resource_type_name, 's2');
        assert.equal(w.created_at, w.updated_at);
        assert.deepEqual(expectStatus(await s.get(processPath(app, w.id)), 200), w);

        const l = expectStatus(await s.get(processesPath(app)), 200);
        assert.equal(l.total, 2);
        assert.deepEqual(
          l.data.map((p: { key: string }) => p.key),
          ['web', 'queue-worker'],
        );
        const page = expectStatus(await s.get(`${processesPath(app)}?limit=1&offset=1`), 200);
        assert.deepEqual([page.total, page.limit, page.offset, page.data[0].id], [2, 1, 1, w.id]);

        const horizontal = { type: 'horizontal', config: { minInstanceCount: 1, maxInstanceCount: 4, targetCpuPercent: 70 } };
        const probe = { httpGet: { path: '/healthz', port: 3000, scheme: 'HTTP' }, periodSeconds: 10 };
        const u = expectStatus(
          await s.patch(processPath(app, w.id), {
            display_name: 'Jobs',
            entrypoint: 'node jobs.js',
            scaling_strategy: horizontal,
            resource_type_id: 'm2',
            port: 3000,
            liveness_probe: probe,
          }),
          200,
        );
        assert.equal(u.key, 'queue-worker', 'the key does not follow later display-name changes');
        assert.equal(u.display_name, 'Jobs');
        assert.equal(u.entrypoint, 'node jobs.js');
        assert.deepEqual(u.scaling_strategy, horizontal);
        assert.equal(u.resource_type_id, RT.m2!.id, 'a resource type may also be named');
        assert.equal(u.memory_limit, RT.m2!.memory_limit);
        assert.equal(u.port, 3000);
        assert.deepEqual(u.liveness_probe, probe);
        assert.equal(u.readiness_probe, null);
        assert.ok(u.updated_at >= w.updated_at);
        assert.deepEqual(expectStatus(await s.get(processPath(app, w.id)), 200), u);

        assert.deepEqual(expectStatus(await s.delete(processPath(app, w.id)), 200), { message: 'Process deleted' });
        expectError(await s.get(processPath(app, w.id)), 404);
        expectError(await s.delete(processPath(app, w.id)), 404);
        assert.equal(expectStatus(await s.get(processesPath(app)), 200).total, 1);
      });

      it('keeps keys unique per application', async () => {
        const app = await createApp(s);
        const a = await createProcess(s, app, { display_name: 'worker', type: 'worker' });
        const b = await createProcess(s, app, { display_name: 'Worker', type: 'worker' });
        assert.equal(a.key, 'worker');
        assert.equal(b.key, 'worker-2');
        const other = await createApp(s);
        assert.equal((await createProcess(s, other, { display_name: 'worker', type: 'worker' })).key, 'worker');
      });

      it('allows at most one web process, and the web process cannot be deleted', async () => {
        const app = await createApp(s);
        const [web] = expectStatus(await s.get(processesPath(app)), 200).data;
        expectError(
          await s.post(processesPath(app), { display_name: 'second web', type: 'web', resource_type_id: RT.s1!.id, scaling_strategy: MANUAL_1 }),
          400,
          /at most one web process/,
        );
        expectError(await s.delete(processPath(app, web.id)), 400, /web process cannot be deleted/);
        assert.equal(expectStatus(await s.get(processesPath(app)), 200).total, 1);
      });

      it('creates job processes with a start policy', async () => {
        const app = await createApp(s);
        const j = await createProcess(s, app, { display_name: 'migrate', type: 'job', entrypoint: 'npm run migrate', job_start_policy: 'beforeDeployment' });
        assert.equal(j.job_start_policy, 'beforeDeployment');
        const d = await createProcess(s, app, { display_name: 'seed', type: 'job' });
        assert.equal(d.job_start_policy, 'afterSuccessDeployment');
        assert.deepEqual(Object.keys(d).sort(), PROCESS_FIELDS);
      });

      it('answers 404 for unknown applications and processes, and for a process of another application', async () => {
        const app = await createApp(s);
        const other = await createApp(s);
        const w = await createProcess(s, app, { display_name: 'w', type: 'worker' });
        expectError(await s.get(processesPath(MISSING)), 404);
        expectError(await s.get(processPath(app, MISSING)), 404);
        expectError(await s.get(processPath(other, w.id)), 404);
        expectError(await s.patch(processPath(other, w.id), { display_name: 'x' }), 404);
        expectError(await s.delete(processPath(other, w.id)), 404);
        expectError(await s.post(processesPath(MISSING), cron('c', { schedule: '* * * * *' })), 404);
      });
    });

    describe('validation', () => {
      let app: string;
      before(async () => {
        app = await createApp(s);
      });
      const create = (body: Record<string, unknown>) => s.post(processesPath(app), { resource_type_id: RT.s1!.id, scaling_strategy: MANUAL_1, ...body });

      it('rejects bodies that do not match the schema', async () => {
        expectError(await s.post(processesPath(app), { display_name: 'x', type: 'worker' }), 400, SCHEMA_MISMATCH);
        expectError(await create({ display_name: 'x', type: 'daemon' }), 400, SCHEMA_MISMATCH);
        expectError(await create({ display_name: '', type: 'worker' }), 400, SCHEMA_MISMATCH);
        expectError(
          await create({ display_name: 'x', type: 'worker', scaling_strategy: { type: 'manual', config: { instanceCount: 51 } } }),
          400,
          SCHEMA_MISMATCH,
        );
        expectError(await create(cron('x', { schedule: '* * * * *', concurrency_policy: 'Allow' })), 400, SCHEMA_MISMATCH);
        expectError(await create(cron('x', { schedule: '* * * * *', max_run_time_seconds: -1 })), 400, SCHEMA_MISMATCH);
        expectError(await create(cron('x', { schedule: '* * * * *', max_run_time_seconds: 1.5 })), 400, SCHEMA_MISMATCH);
        expectError(await create(cron('x', { schedule: 'x'.repeat(101) })), 400, SCHEMA_MISMATCH);
      });

      it('needs a valid cron expression for cron processes (5 fields, or 6 with seconds)', async () => {
        expectError(await create(cron('no schedule')), 400, /schedule is required/);
        for (const bad of ['61 * * * *', '* * * *', '* * * * * * *', 'every day', '', '0 0 30 2 *'])
          expectError(await create(cron('bad', { schedule: bad })), 400, /schedule/);
        const five = await createProcess(s, app, cron('five', { schedule: '0 3 * * MON-FRI' }));
        assert.equal(five.schedule, '0 3 * * MON-FRI');
        const six = await createProcess(s, app, cron('six', { schedule: '*/10 * * * * *' }));
        assert.equal(six.schedule, '*/10 * * * * *');
      });

      it('applies the cron defaults: UTC, Forbid, no maximum run time', async () => {
        const c = await createProcess(s, app, cron('defaults', { schedule: '0 0 * * *' }));
        assert.deepEqual(Object.keys(c).sort(), CRON_FIELDS);
        assert.equal(c.time_zone, 'UTC');
        assert.equal(c.concurrency_policy, 'Forbid');
        assert.equal(c.max_run_time_seconds, null);
        assert.equal(c.port, null);
        assert.equal(c.is_ingress_enabled, false);
      });

      it('accepts IANA time zones (canonical spelling) and rejects others', async () => {
        const ny = await createProcess(s, app, cron('ny', { schedule: '0 9 * * *', time_zone: 'America/New_York' }));
        assert.equal(ny.time_zone, 'America/New_York');
        const paris = await createProcess(s, app, cron('paris', { schedule: '0 9 * * *', time_zone: 'europe/paris' }));
        assert.equal(paris.time_zone, 'Europe/Paris');
        for (const tz of ['Mars/Olympus', '+01:00', 'GMT+25', ''])
          expectError(await create(cron('tz', { schedule: '0 9 * * *', time_zone: tz })), 400, /time_zone/);
        expectError(await s.patch(processPath(app, ny.id), { time_zone: 'Nowhere/Land' }), 400, /time_zone/);
        assert.equal(expectStatus(await s.patch(processPath(app, ny.id), { time_zone: 'Asia/Tokyo' }), 200).time_zone, 'Asia/Tokyo');
      });

      it('keeps cron-only settings off other process types', async () => {
        expectError(await create({ display_name: 'w', type: 'worker', schedule: '* * * * *' }), 400, /schedule applies to cron/);
        expectError(await create({ display_name: 'w', type: 'worker', time_zone: 'UTC' }), 400, /time_zone applies to cron/);
        expectError(await create({ display_name: 'w', type: 'worker', concurrency_policy: 'Replace' }), 400, /concurrency_policy applies to cron/);
        expectError(await create({ display_name: 'w', type: 'worker', max_run_time_seconds: 60 }), 400, /max_run_time_seconds applies to cron/);
        expectError(await create({ display_name: 'w', type: 'worker', job_start_policy: 'beforeDeployment' }), 400, /job_start_policy applies to job/);
        expectError(await create(cron('c', { schedule: '* * * * *', port: 3000 })), 400, /port applies to web and worker/);
        expectError(
          await create(cron('c', { schedule: '* * * * *', scaling_strategy: { type: 'horizontal', config: { minInstanceCount: 1, maxInstanceCount: 2 } } })),
          400,
          /scale manually/,
        );
        const w = await createProcess(s, app, { display_name: 'plain worker', type: 'worker', concurrency_policy: 'Forbid' });
        assert.deepEqual(Object.keys(w).sort(), PROCESS_FIELDS);
        expectError(await s.patch(processPath(app, w.id), { schedule: '* * * * *' }), 400, /schedule applies to cron/);
        expectError(await s.patch(processPath(app, w.id), { concurrency_policy: 'Forbid' }), 400, /concurrency_policy applies to cron/);
        expectError(await s.patch(processPath(app, w.id), { ingress_protocol: 'grpc' }), 400, /ingress_protocol applies to web/);
      });

      it('rejects unknown resource types and inverted horizontal bounds', async () => {
        expectError(await create({ display_name: 'w', type: 'worker', resource_type_id: MISSING }), 400, /resource_type_id/);
        expectError(
          await create({ display_name: 'w', type: 'worker', scaling_strategy: { type: 'horizontal', config: { minInstanceCount: 3, maxInstanceCount: 2 } } }),
          400,
          /minInstanceCount/,
        );
      });

      it('updates cron settings and keeps those a PATCH leaves out', async () => {
        const c = await createProcess(s, app, cron('policy', { schedule: '0 * * * *', concurrency_policy: 'Replace', max_run_time_seconds: 120 }));
        assert.equal(c.concurrency_policy, 'Replace');
        assert.equal(c.max_run_time_seconds, 120);
        const u = expectStatus(await s.patch(processPath(app, c.id), { display_name: 'renamed' }), 200);
        assert.equal(u.concurrency_policy, 'Replace', 'an omitted concurrency_policy is not reset to the default');
        assert.equal(u.max_run_time_seconds, 120);
        const v = expectStatus(
          await s.patch(processPath(app, c.id), { schedule: '*/5 * * * *', concurrency_policy: 'Forbid', max_run_time_seconds: null }),
          200,
        );
        assert.equal(v.schedule, '*/5 * * * *');
        assert.equal(v.concurrency_policy, 'Forbid');
        assert.equal(v.max_run_time_seconds, null);
        assert.equal(expectStatus(await s.patch(processPath(app, c.id), { max_run_time_seconds: 0 }), 200).max_run_time_seconds, 0);
        expectError(await s.patch(processPath(app, c.id), { schedule: '99 * * * *' }), 400, /schedule/);
        assert.equal(expectStatus(await s.get(processPath(app, c.id)), 200).schedule, '*/5 * * * *');
      });
    });

    describe('metrics', () => {
      const range = (secondsBack: number, interval: number) => {
        const to = new Date();
        return `from=${new Date(to.getTime() - secondsBack * 1000).toISOString()}&to=${to.toISOString()}&interval_in_seconds=${interval}`;
      };

      it('serves every series as {time, value} points at the interval; zeros while the application is not running', async () => {
        const app = await createApp(s);
        const [web] = expectStatus(await s.get(processesPath(app)), 200).data;
        for (const m of METRICS) {
          const pts = expectStatus(await s.get(`${processPath(app, web.id)}/metrics/${m}?${range(60, 10)}`), 200);
          assert.ok(Array.isArray(pts) && pts.length >= 6 && pts.length <= 7, `${m}: ${pts.length} points`);
          for (const p of pts) {
            assert.deepEqual(Object.keys(p).sort(), ['time', 'value']);
            assert.equal(Date.parse(p.time) % 10_000, 0, 'points sit on the interval');
            assert.equal(p.value, 0, `${m} is 0 before the first deployment`);
          }
        }
      });

      it('reports limits from the resource type and the instance count once deployed', async () => {
        const app = await createApp(s);
        const [web] = expectStatus(await s.get(processesPath(app)), 200).data;
        await deploy(s, app);
        const series = async (m: string) =>
          expectStatus<{ time: string; value: number }[]>(await s.get(`${processPath(app, web.id)}/metrics/${m}?${range(30, 1)}`), 200);
        await waitFor('a non-zero cpu limit point', async () => (await series('cpu-limit')).some((p) => p.value > 0));
        const cores = RT.s1!.cpu_limit / 1000;
        const bytes = RT.s1!.memory_limit * 1024 * 1024;
        for (const p of await series('cpu-limit')) assert.ok(p.value === 0 || p.value === cores, `cpu limit ${p.value}`);
        for (const p of await series('memory-limit')) assert.ok(p.value === 0 || p.value === bytes, `memory limit ${p.value}`);
        for (const p of await series('instance-count')) assert.ok(p.value === 0 || p.value === 1, `instances ${p.value}`);
        for (const p of await series('cpu-usage')) assert.ok(p.value >= 0 && p.value <= cores);
        for (const p of await series('memory-usage')) assert.ok(p.value >= 0 && p.value <= bytes);
        assert.ok((await series('memory-usage')).some((p) => p.value > 0));
        // Deterministic: the same window gives the same series.
        const q = range(20, 1);
        assert.deepEqual(
          expectStatus(await s.get(`${processPath(app, web.id)}/metrics/cpu-usage?${q}`), 200),
          expectStatus(await s.get(`${processPath(app, web.id)}/metrics/cpu-usage?${q}`), 200),
        );
      });

      it('validates the window', async () => {
        const app = await createApp(s);
        const [web] = expectStatus(await s.get(processesPath(app)), 200).data;
        const base = `${processPath(app, web.id)}/metrics/cpu-usage`;
        const r = await s.get(`${base}?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z&interval_in_seconds=60`);
        expectError(r, 400);
        assert.ok(Array.isArray(r.body.data?.issues), 'the metrics contract lists no 400: data.issues explains');
        expectError(await s.get(`${base}?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z`), 400, SCHEMA_MISMATCH);
        expectError(await s.get(`${base}?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&interval_in_seconds=0`), 400, SCHEMA_MISMATCH);
        expectError(await s.get(`${base}?from=yesterday&to=2026-01-02T00:00:00Z&interval_in_seconds=60`), 400, SCHEMA_MISMATCH);
        expectError(await s.get(`${processPath(app, web.id)}/metrics/exit-codes?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z`), 400);
        assert.deepEqual(
          expectStatus(await s.get(`${processPath(app, web.id)}/metrics/exit-codes?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z`), 200),
          [],
        );
      });
    });

    describe('permissions and tenancy', () => {
      let app: string;
      let web: { id: string };
      let cronProc: { id: string };
      before(async () => {
        app = await createApp(s);
        web = expectStatus(await s.get(processesPath(app)), 200).data[0];
        cronProc = await createProcess(s, app, cron('nightly', { schedule: '0 3 * * *' }));
      });
      const metricsQ = 'from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z&interval_in_seconds=600';

      it('a Company Viewer reads processes and metrics but cannot change them', async () => {
        const { token } = await s.newKey({ role: 'Company Viewer' });
        expectStatus(await s.get(processesPath(app), { token }), 200);
        expectStatus(await s.get(processPath(app, web.id), { token }), 200);
        expectStatus(await s.get(`${processPath(app, web.id)}/metrics/cpu-usage?${metricsQ}`, { token }), 200);
        expectStatus(await s.get(`${processPath(app, cronProc.id)}/metrics/exit-codes?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z`, { token }), 200);
        expectError(
          await s.post(processesPath(app), { display_name: 'w', type: 'worker', resource_type_id: RT.s1!.id, scaling_strategy: MANUAL_1 }, { token }),
          403,
          /APP:UPDATE/,
        );
        expectError(await s.patch(processPath(app, web.id), { entrypoint: 'x' }, { token }), 403, /APP:UPDATE/);
        expectError(await s.delete(processPath(app, cronProc.id), { token }), 403, /APP:UPDATE/);
        expectError(await s.post(`${processPath(app, cronProc.id)}/trigger`, undefined, { token }), 403, /APP:UPDATE/);
      });

      it("a key scoped to one application sees only that application's processes", async () => {
        const other = await createApp(s);
        const { token } = await s.newKey({
          capabilities: [
            { permission: 'APP:READ', id_resource: app },
            { permission: 'APP:UPDATE', id_resource: app },
          ],
        });
        expectStatus(await s.get(processesPath(app), { token }), 200);
        await createProcess(s, app, { display_name: 'scoped worker', type: 'worker' }, token);
        expectError(await s.get(processesPath(other), { token }), 404);
        expectError(
          await s.post(processesPath(other), { display_name: 'w', type: 'worker', resource_type_id: RT.s1!.id, scaling_strategy: MANUAL_1 }, { token }),
          404,
        );
      });

      it('another company gets 404 for everything of this application', async () => {
        const { token } = await s.newCompany();
        expectError(await s.get(processesPath(app), { token }), 404);
        expectError(await s.get(processPath(app, web.id), { token }), 404);
        expectError(
          await s.post(processesPath(app), { display_name: 'w', type: 'worker', resource_type_id: RT.s1!.id, scaling_strategy: MANUAL_1 }, { token }),
          404,
        );
        expectError(await s.patch(processPath(app, web.id), { entrypoint: 'x' }, { token }), 404);
        expectError(await s.delete(processPath(app, cronProc.id), { token }), 404);
        expectError(await s.post(`${processPath(app, cronProc.id)}/trigger`, undefined, { token }), 404);
        expectError(await s.get(`${processPath(app, web.id)}/metrics/memory-usage?${metricsQ}`, { token }), 404);
        expectError(await s.get(`${processPath(app, cronProc.id)}/metrics/exit-codes?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z`, { token }), 404);
        assert.equal(expectStatus(await s.get(processesPath(app)), 200).total, 3, 'nothing was created through the other company');
      });
    });

    describe('clone and deletion of the application', () => {
      it('a clone gets the same processes under new ids', async () => {
        const app = await createApp(s);
        await createProcess(
          s,
          app,
          cron('nightly', { schedule: '0 3 * * *', time_zone: 'Europe/Berlin', concurrency_policy: 'Replace', max_run_time_seconds: 600 }),
        );
        await createProcess(s, app, { display_name: 'worker', type: 'worker', entrypoint: 'node w.js' });
        const src = expectStatus(await s.get(processesPath(app)), 200).data;
        const clone = expectStatus(await s.post(`/applications/${app}/clone`, { display_name: 'proc clone' }), 201);
        const copied = expectStatus(await s.get(processesPath(clone.id)), 200).data;
        assert.equal(copied.length, src.length);
        const strip = (p: Record<string, unknown>) => {
          const { id: _i, app_id: _a, created_at: _c, updated_at: _u, internal_hostname: _h, ...rest } = p;
          return rest;
        };
        assert.deepEqual(copied.map(strip), src.map(strip));
        for (const p of copied) {
          assert.equal(p.app_id, clone.id);
          assert.ok(!src.some((q: { id: string }) => q.id === p.id));
        }
      });

      it('deleting the application removes its processes', async () => {
        const app = await createApp(s);
        await createProcess(s, app, cron('nightly', { schedule: '0 3 * * *' }));
        expectStatus(await s.delete(`/applications/${app}`), 200);
        await waitFor('application gone', async () => (await s.get(`/applications/${app}`)).status === 404);
        const left = await s.app.database.db.selectFrom('processes').select('id').where('app_id', '=', app).execute();
        assert.deepEqual(left, []);
      });
    });
  });

  describe(`process rate tiers [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: { ...GENEROUS, general_write: 1, logs: 1 } });

    it('process changes count in the general write tier (per operation); exit codes in the logs tier', async () => {
      const app = await createApp(s);
      const body = { display_name: 'w', type: 'worker', resource_type_id: RT.s1!.id, scaling_strategy: MANUAL_1 };
      const first = await s.post(processesPath(app), body);
      expectStatus(first, 200);
      assert.equal(first.headers.get('x-ratelimit-limit'), '1');
      const second = await s.post(processesPath(app), body);
      expectError(second, 429);
      assert.ok(Number(second.headers.get('retry-after')) > 0);
      expectStatus(await s.patch(processPath(app, first.body.id), { entrypoint: 'x' }), 200);
      expectError(await s.patch(processPath(app, first.body.id), { entrypoint: 'y' }), 429);
      // Reads are in the read tier and not throttled by either.
      expectStatus(await s.get(processesPath(app)), 200);
      const ec = `${processPath(app, first.body.id)}/metrics/exit-codes?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z`;
      expectStatus(await s.get(ec), 200);
      expectError(await s.get(ec), 429);
    });
  });
}
