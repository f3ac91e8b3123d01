// Access logs and the eight traffic metrics of a static site, produced by the simulated runtime
// from the site's traffic: nothing before its first successful production deployment, consistent
// views afterwards (the status-code breakdown sums to the request count of the same window, a
// minute's access log lines are that minute's requests).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TRAFFIC_METRICS } from '../helpers/simulation.js';
import { DB_KINDS, GENEROUS, skipUnless, type TestServer, useServer } from '../helpers/server.js';
import { MISSING, expectError, expectStatus } from '../helpers/util.js';
import { IMMEDIATE_ENV, OP, deployedSite, createSite, setProgression, sitePath, window } from './support.js';

const metric = (s: TestServer, id: string, name: string, query = window()) => s.get(`${sitePath(id)}/metrics/${name}?${query}`);

for (const kind of DB_KINDS) {
  describe(`static sites: access logs and metrics [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    it('before the first successful production deployment: zeros, empty lists, no access log lines', async () => {
      await setProgression(s, OP, { mode: 'reads', reads: 1000 });
      try {
        const site = await createSite(s);
        const rpm = expectStatus(await metric(s, site.id, 'requests-per-minute'), 200);
        assert.ok(rpm.length > 0 && rpm.every((p: { value: number }) => p.value === 0));
        assert.deepEqual(expectStatus(await metric(s, site.id, 'response-time-avg'), 200), { average_response_time_ms: 0 });
        for (const name of ['top-status-codes', 'top-countries', 'slowest-requests', 'top-pages'])
          assert.deepEqual(expectStatus(await metric(s, site.id, name), 200), [], name);
        assert.deepEqual(expectStatus(await s.get(`${sitePath(site.id)}/access-logs`), 200), []);
      } finally {
        await setProgression(s, OP, { mode: 'immediate' });
      }
    });

    it('afterwards: every metric answers, and the status codes sum to the requests of the same window', async () => {
      const site = await deployedSite(s);
      const now = Date.now();
      const win = `from=${new Date(now - 10 * 60_000).toISOString()}&to=${new Date(now + 5 * 60_000).toISOString()}&interval_in_seconds=60`;
      for (const name of TRAFFIC_METRICS) expectStatus(await metric(s, site.id, name, win), 200);
      const rpm = expectStatus(await metric(s, site.id, 'requests-per-minute', win), 200) as { time: string; value: number }[];
      assert.ok(rpm.some((p) => p.value > 0));
      assert.ok(
        rpm.every((p) => Number.isInteger(p.value)),
        'requests are whole requests',
      );
      const codes = expectStatus(await metric(s, site.id, 'status-codes', win), 200) as { time: string; value: Record<string, number> }[];
      assert.deepEqual(
        codes.map((p) => p.time),
        rpm.map((p) => p.time),
      );
      const sum = (o: Record<string, number>) => Object.values(o).reduce((n, v) => n + v, 0);
      codes.forEach((p, i) => assert.equal(sum(p.value), rpm[i]!.value, `point ${p.time}`));
      const total = rpm.reduce((n, p) => n + p.value, 0);
      const top = expectStatus(await metric(s, site.id, 'top-status-codes', win), 200) as { status: string; total: number }[];
      assert.equal(
        top.reduce((n, t) => n + t.total, 0),
        total,
        "the ranked codes sum to the window's requests",
      );
      assert.equal(top[0]!.status, '200');
      const avg = expectStatus(await metric(s, site.id, 'response-time-avg', win), 200);
      assert.ok(avg.average_response_time_ms > 0);
      const pages = expectStatus(await metric(s, site.id, 'top-pages', `${win}&limit=2`), 200);
      assert.equal(pages.length, 2);
      assert.ok(pages[0].total >= pages[1].total);
      assert.equal(expectStatus(await metric(s, site.id, 'top-countries', `${win}&limit=3`), 200).length, 3);
      assert.equal(expectStatus(await metric(s, site.id, 'slowest-requests', `${win}&limit=1`), 200).length, 1);
      // Another site has other traffic.
      const other = await deployedSite(s);
      assert.notDeepEqual(expectStatus(await metric(s, other.id, 'requests-per-minute', win), 200), rpm);
    });

    it("access log lines: deterministic, one per request of the minute, on the site's hostname; filters and limit", async () => {
      const site = await deployedSite(s);
      const minute = Math.floor(Date.now() / 60_000) * 60_000 - 60_000;
      const from = new Date(minute).toISOString();
      const to = new Date(minute + 59_999).toISOString();
      const lines = expectStatus(await s.get(`${sitePath(site.id)}/access-logs?from=${from}&to=${to}&limit=5000`), 200) as any[];
      const [point] = expectStatus(await metric(s, site.id, 'requests-per-minute', `from=${from}&to=${from}&interval_in_seconds=60`), 200);
      // The site started serving during this test: only the part of the minute after its start has lines.
      assert.ok(lines.length <= point.value);
      const later = Math.floor(Date.now() / 60_000) * 60_000 + 60_000;
      const full = expectStatus(
        await s.get(`${sitePath(site.id)}/access-logs?from=${new Date(later - 120_000).toISOString()}&to=${new Date(later + 59_999).toISOString()}&limit=5000`),
        200,
      ) as any[];
      assert.ok(full.length > 0 || lines.length === 0);
      for (const l of [...lines, ...full]) {
        assert.equal(l.service, site.name);
        assert.equal(l.tags.kind, 'access');
        assert.equal(l.tags.host, site.hostname);
        assert.ok(l.message.includes(site.hostname));
      }
      assert.deepEqual(expectStatus(await s.get(`${sitePath(site.id)}/access-logs?from=${from}&to=${to}&limit=5000`), 200), lines, 'deterministic');
      expectError(await s.get(`${sitePath(site.id)}/access-logs?from=${to}&to=${from}`), 400);
      expectError(await s.get(`${sitePath(site.id)}/access-logs?limit=0`), 400);
      expectError(await s.get(`${sitePath(MISSING)}/access-logs`), 404);
    });

    it('metrics need from and to (400) and answer 404 for an unknown site', async () => {
      const site = await createSite(s);
      expectError(await s.get(`${sitePath(site.id)}/metrics/requests-per-minute`), 400);
      expectError(await metric(s, site.id, 'top-pages', 'from=yesterday&to=today'), 400);
      for (const name of TRAFFIC_METRICS) expectError(await metric(s, MISSING, name), 404);
    });
  });
}
