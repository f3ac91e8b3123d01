// GET /metrics: Prometheus text that counts requests by operation, refused without a token, off
// when SLIPWAY_METRICS=off; the counters of jobs, webhook deliveries and rate-limit rejections move
// when those happen; the PostgreSQL pool's gauges.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, startServer, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { Receiver } from '../webhooks/support.js';
import { observability } from '../../src/shared/observability/index.js';
import { scrape, total } from './support.js';

for (const kind of DB_KINDS) {
  describe(`metrics [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const rx = new Receiver();
    before(() => rx.start());
    after(() => rx.close());
    const s = useServer({
      db: kind,
      env: { SLIPWAY_METRICS_TOKEN: 'metrics-reader-token', SLIPWAY_WEBHOOK_RETRY_SCALE: '0.00001', SLIPWAY_JOB_POLL_MS: '20' },
      rateLimits: { ...GENEROUS, general_write: 3 },
    });

    it('counts a request by operation, method and status, with its latency', async () => {
      const before = (await scrape(s)).samples;
      expectStatus(await s.get('/projects'), 200);
      expectStatus(await s.get('/projects'), 200);
      const m = await scrape(s);
      assert.equal(m.status, 200);
      assert.match(m.type ?? '', /^text\/plain; version=0\.0\.4/);
      const labels = { operation: 'listProjectsV3', method: 'GET', status: '200' };
      assert.equal(total(m.samples, 'slipway_http_requests_total', labels) - total(before, 'slipway_http_requests_total', labels), 2);
      assert.ok(total(m.samples, 'slipway_http_request_duration_seconds_count', { operation: 'listProjectsV3' }) >= 2);
      // Process metrics of prom-client: memory and event-loop lag.
      assert.ok(total(m.samples, 'process_resident_memory_bytes') > 0);
      assert.ok(m.samples.some((x) => x.name === 'nodejs_eventloop_lag_seconds'));
    });

    it('labels a path no route knows as unknown, not by the path', async () => {
      await s.get('/no-such-thing/123');
      const m = await scrape(s);
      assert.ok(total(m.samples, 'slipway_http_requests_total', { operation: 'unknown', status: '404' }) >= 1);
      assert.ok(!m.samples.some((x) => x.labels.operation?.includes('no-such-thing')));
    });

    it('answers 401 without a token or with a wrong one, and takes SLIPWAY_METRICS_TOKEN', async () => {
      assert.equal((await scrape(s, null)).status, 401);
      assert.equal((await scrape(s, 'wrong')).status, 401);
      assert.equal((await scrape(s, s.token)).status, 401, 'an API key is not a metrics token');
      assert.equal((await scrape(s, 'metrics-reader-token')).status, 200);
    });

    it('counts jobs by kind and outcome, and webhook deliveries by outcome', async () => {
      const hook = expectStatus(await s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: rx.url }), 201);
      const before = (await scrape(s)).samples;
      expectStatus(
        await s.post('/applications', { display_name: 'metered', cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1.27' }),
        201,
      );
      await waitFor('the delivery', () => rx.for(hook.id).length > 0);
      // The attempt is counted once sent, its job once its outcome is recorded.
      const grew = (now: typeof before, name: string, labels: Record<string, string>) => total(now, name, labels) > total(before, name, labels);
      const m = await waitFor('the delivery and its job counted', async () => {
        const now = (await scrape(s)).samples;
        return grew(now, 'slipway_webhook_deliveries_total', { outcome: 'success' }) &&
          grew(now, 'slipway_jobs_total', { kind: 'webhook.deliver', outcome: 'done' })
          ? now
          : undefined;
      });
      // The queue gauges are there (read at the scrape).
      assert.ok(m.some((x) => x.name === 'slipway_jobs_queue_depth'));
    });

    it('counts rate-limit rejections by tier', async () => {
      for (let i = 0; i < 5; i++) await s.post('/projects', { name: `rl ${i}` });
      const m = await scrape(s);
      assert.ok(total(m.samples, 'slipway_rate_limit_rejections_total', { tier: 'general_write' }) >= 1);
      assert.ok(total(m.samples, 'slipway_http_requests_total', { operation: 'createProjectV3', status: '429' }) >= 1);
    });

    it('shows what the edge reports by service (its onServed listeners are told of every answered request)', async () => {
      // The simulated runtime runs no edge: its report is given as the edge gives it.
      const metrics = observability(s.app)!.metrics!;
      const owner = { kind: 'app', id: '01a22334-0000-7000-8000-000000000001', companyId: s.companyId };
      const served = {
        owner,
        method: 'GET',
        path: '/',
        bytes: 10,
        clientIp: '127.0.0.1',
        host: 'x.localhost',
        userAgent: '',
        referer: '',
        cached: false,
        country: null,
        at: new Date(),
      };
      metrics.edgeServed({ ...served, status: 200, durationMs: 3 });
      metrics.edgeServed({ ...served, status: 502, durationMs: 2000 });
      const m = (await scrape(s)).samples;
      assert.equal(total(m, 'slipway_edge_requests_total', { kind: 'app', id: owner.id, status: '2xx' }), 1);
      assert.equal(total(m, 'slipway_edge_requests_total', { kind: 'app', id: owner.id, status: '5xx' }), 1);
      assert.equal(total(m, 'slipway_edge_request_duration_seconds_count', { kind: 'app' }), 2);
      assert.equal(total(m, 'slipway_edge_request_duration_seconds_bucket', { kind: 'app', le: '0.005' }), 1);
      assert.equal(total(m, 'slipway_edge_request_duration_seconds_bucket', { kind: 'app', le: '+Inf' }), 2);
    });

    if (kind === 'postgres')
      it('shows the database pool in use and idle', async () => {
        const m = await scrape(s);
        assert.ok(total(m.samples, 'slipway_db_pool_in_use') + total(m.samples, 'slipway_db_pool_idle') >= 1);
        assert.ok(m.samples.some((x) => x.name === 'slipway_db_pool_waiting'));
      });
  });
}

describe('metrics switched off', () => {
  it('SLIPWAY_METRICS=off: no /metrics', async () => {
    const s = await startServer({ env: { SLIPWAY_METRICS: 'off' } });
    try {
      assert.equal((await scrape(s)).status, 404);
    } finally {
      await s.close();
    }
  });
});
