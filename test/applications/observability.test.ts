// Runtime logs and traffic metrics of an application: process start lines after a successful
// deployment; the metric endpoints answer the contract shapes — zeros and empty lists before the
// first successful deployment, non-zero afterwards.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer, type TestServer } from '../helpers/server.js';
import { expectError, expectStatus, MISSING } from '../helpers/util.js';
import { PROCESS_RESOURCE_TYPES } from '../../src/modules/resources/catalog.js';
import { IMMEDIATE_ENV, addFault, appPath, createApp, deploy, runtimeLogs, trigger, waitForFinal, window } from './support.js';

const metric = (s: TestServer, appId: string, name: string, extra = '') => s.get(`${appPath(appId)}/metrics/${name}?${window()}${extra}`);

for (const kind of DB_KINDS) {
  describe(`applications: runtime logs and metrics [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    it('runtime logs show a start line per process after a successful deployment, and none before', async () => {
      const a = await createApp(s, { kind: 'image' });
      expectStatus(
        await s.post(`${appPath(a.id)}/processes`, {
          display_name: 'worker',
          type: 'worker',
          resource_type_id: PROCESS_RESOURCE_TYPES[1]!.id,
          scaling_strategy: { type: 'manual', config: { instanceCount: 2 } },
        }),
        200,
      );
      assert.deepEqual(
        (await runtimeLogs(s, a.id)).filter((l) => /^Started process/.test(l.message)),
        [],
      );
      const d = await deploy(s, a.id);
      const logs = await runtimeLogs(s, a.id);
      const started = logs.filter((l) => /^Started process/.test(l.message));
      assert.deepEqual(started.map((l) => l.message).sort(), ['Started process web (1 instance)', 'Started process worker (2 instances)']);
      for (const l of started) {
        assert.equal(l.tags.kind, 'runtime');
        assert.equal(l.tags.deployment_id, d.id);
        assert.equal(typeof l.tags.process_id, 'string');
        assert.equal((l as any).service, a.name);
      }
      // Build lines are not runtime lines.
      assert.ok(!logs.some((l) => /^Rolling out/.test(l.message)));
      // Filters and limit.
      const filtered = await runtimeLogs(s, a.id, 'filters=worker');
      assert.ok(filtered.length >= 1 && filtered.every((l) => /worker/i.test(l.message)));
      assert.equal((await runtimeLogs(s, a.id, 'limit=1')).length, 1);
      expectError(await s.get(`${appPath(MISSING)}/runtime-logs`), 404);
    });

    it('a failed deployment starts no process', async () => {
      const a = await createApp(s);
      await addFault(s, { operation: 'deployment', target_id: a.id, phase: 'rollout', remaining: 1 });
      const d = await trigger(s, a.id);
      assert.equal((await waitForFinal(s, a.id, d.id)).status, 'failed');
      assert.deepEqual(
        (await runtimeLogs(s, a.id)).filter((l) => /^Started process/.test(l.message)),
        [],
      );
    });

    it('before the first successful deployment every metric is zero or empty (contract shapes)', async () => {
      const a = await createApp(s);
      const rpm = expectStatus(await metric(s, a.id, 'requests-per-minute'), 200);
      assert.ok(rpm.length > 0, 'a point per interval');
      assert.ok(rpm.every((p: { time: string; value: number }) => p.value === 0 && !Number.isNaN(Date.parse(p.time))));
      const rt = expectStatus(await metric(s, a.id, 'response-time'), 200);
      assert.ok(rt.length > 0 && rt.every((p: { value: number }) => p.value === 0));
      assert.deepEqual(expectStatus(await metric(s, a.id, 'response-time-avg'), 200), { average_response_time_ms: 0 });
      const codes = expectStatus(await metric(s, a.id, 'status-codes'), 200);
      assert.ok(codes.length > 0 && codes.every((p: { value: Record<string, number> }) => Object.keys(p.value).length === 0));
      for (const name of ['top-status-codes', 'top-countries', 'slowest-requests', 'top-pages'])
        assert.deepEqual(expectStatus(await metric(s, a.id, name), 200), [], name);
    });

    it('after a successful deployment the metrics are non-zero', async () => {
      const a = await createApp(s);
      await deploy(s, a.id);
      const rpm = expectStatus(await metric(s, a.id, 'requests-per-minute', '&interval_in_seconds=60'), 200) as { time: string; value: number }[];
      assert.ok(
        rpm.some((p) => p.value > 0),
        JSON.stringify(rpm),
      );
      const rt = expectStatus(await metric(s, a.id, 'response-time', '&interval_in_seconds=60'), 200) as { value: number }[];
      assert.ok(rt.some((p) => p.value > 0));
      const avg = expectStatus(await metric(s, a.id, 'response-time-avg'), 200);
      assert.ok(avg.average_response_time_ms > 0);
      const codes = expectStatus(await metric(s, a.id, 'status-codes'), 200) as { value: Record<string, number> }[];
      assert.ok(codes.some((p) => (p.value['200'] ?? 0) > 0));
      const top = expectStatus(await metric(s, a.id, 'top-status-codes'), 200) as { status: string; total: number }[];
      assert.equal(top[0]!.status, '200', 'most requests succeed');
      assert.ok(top[0]!.total > 0);
      for (let i = 1; i < top.length; i++) assert.ok(top[i - 1]!.total >= top[i]!.total, 'sorted by total');
      const countries = expectStatus(await metric(s, a.id, 'top-countries'), 200) as { country: string; total: number; response_time: number }[];
      assert.ok(countries.length > 0 && countries.every((c) => c.total >= 0 && c.response_time > 0 && c.country.length === 2));
      const slow = expectStatus(await metric(s, a.id, 'slowest-requests'), 200) as {
        average_response_time_ms: number;
        count_of_requests: number;
        client_request_method: string;
      }[];
      assert.ok(slow.length > 0 && slow.every((r) => r.average_response_time_ms > 0 && r.count_of_requests > 0));
      const pages = expectStatus(await metric(s, a.id, 'top-pages'), 200) as { page: string; total: number }[];
      assert.ok(pages.length > 0 && pages[0]!.total > 0);
      // limit bounds the ranked lists.
      assert.equal(expectStatus(await metric(s, a.id, 'top-pages', '&limit=2'), 200).length, 2);
      assert.equal(expectStatus(await metric(s, a.id, 'top-countries', '&limit=3'), 200).length, 3);
      assert.equal(expectStatus(await metric(s, a.id, 'slowest-requests', '&limit=1'), 200).length, 1);
    });

    it('metrics need from and to (400) and answer 404 for an unknown application', async () => {
      const a = await createApp(s);
      expectError(await s.get(`${appPath(a.id)}/metrics/requests-per-minute`), 400);
      expectError(await s.get(`${appPath(a.id)}/metrics/top-pages?from=yesterday&to=today`), 400);
      expectError(await metric(s, MISSING, 'requests-per-minute'), 404);
      expectError(await metric(s, MISSING, 'top-pages'), 404);
    });
  });
}
