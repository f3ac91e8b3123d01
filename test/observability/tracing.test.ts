// OpenTelemetry traces to an OTLP/HTTP receiver the test runs: a span per request named by its
// operation, a child span for its transaction, the trace continued into the jobs it queued (also
// by a server started after the one that queued them) and sent on to webhook receivers as W3C
// `traceparent`; a caller's traceparent continued.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GENEROUS, startServer, type TestServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { Receiver } from '../webhooks/support.js';
import { OtlpReceiver } from './support.js';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
const app = (s: TestServer, name: string) =>
  s.post('/applications', { display_name: name, cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1.27' });

describe('traces', () => {
  const otlp = new OtlpReceiver();
  const rx = new Receiver();
  const dir = mkdtempSync(join(tmpdir(), 'slipway-traces-'));
  before(async () => {
    await otlp.start();
    await rx.start();
  });
  after(async () => {
    await rx.close();
    await otlp.close();
    rmSync(dir, { recursive: true, force: true });
  });
  /** A traced server; `dir`: on that data directory (a restart), else on its own. */
  const traced = (dataDir?: string) =>
    startServer({
      env: { SLIPWAY_OTEL_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: '50', SLIPWAY_JOB_POLL_MS: '20' },
      flags: dataDir ? { 'data-dir': dataDir } : {},
      rateLimits: GENEROUS,
    });

  it('a request span by operation, its transaction as a child, the webhook job in the same trace, traceparent sent to the receiver', async () => {
    const s = await traced();
    try {
      const hook = expectStatus(await s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: rx.url }), 201);
      const created = expectStatus(await app(s, 'traced app'), 201);
      const delivered = await waitFor('the delivery', () => rx.for(hook.id).find((r) => r.json.data.id === created.id));
      const tp = TRACEPARENT.exec(String(delivered.headers.traceparent));
      assert.ok(tp, `traceparent sent: ${delivered.headers.traceparent}`);
      const traceId = tp[1]!;
      // The delivery continues the request's trace.
      const request = await waitFor('the request span', () => otlp.spans.find((x) => x.name === 'createApplicationV3' && x.traceId === traceId));
      assert.equal(request.parentSpanId, '');
      assert.equal(request.attributes['http.response.status_code'], 201);
      const tx = await waitFor('the transaction span', () => otlp.spans.find((x) => x.name === 'db.transaction' && x.parentSpanId === request.spanId));
      const job = await waitFor('the delivery job span', () => otlp.spans.find((x) => x.name === 'job webhook.deliver' && x.traceId === traceId));
      // The job was queued in the transaction: its span is the transaction's child.
      assert.equal(job.parentSpanId, tx.spanId);
      assert.equal(tp[2], job.spanId, 'the receiver is told the job span');
    } finally {
      await s.close();
    }
  });

  it("continues a caller's traceparent", async () => {
    const s = await traced();
    try {
      const callerTrace = 'a1'.repeat(16);
      const callerSpan = 'b2'.repeat(8);
      expectStatus(await s.get('/projects', { headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` } }), 200);
      const span = await waitFor('the request span', () => otlp.spans.find((x) => x.name === 'listProjectsV3' && x.traceId === callerTrace));
      assert.equal(span.parentSpanId, callerSpan);
    } finally {
      await s.close();
    }
  });

  it('a job queued before a restart continues its trace when the next server runs it', async () => {
    const first = await traced(dir);
    let traceId = '';
    let hookId = '';
    let appId = '';
    try {
      hookId = expectStatus(await first.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: rx.url }), 201).id;
      // No job runs on this server: the delivery stays queued in the database.
      await first.app.jobs.stop();
      appId = expectStatus(await app(first, 'queued across a restart'), 201).id;
      const request = await waitFor('the request span', () =>
        otlp.spans.find((x) => x.name === 'createApplicationV3' && !otlp.spans.some((y) => y.name === 'job webhook.deliver' && y.traceId === x.traceId)),
      );
      traceId = request.traceId;
    } finally {
      await first.close();
    }
    assert.equal(rx.for(hookId).length, 0);
    // Its API key is the first server's (its bootstrap token is not used): it only runs the job.
    const second = await traced(dir);
    try {
      const delivered = await waitFor('the delivery by the next server', () => rx.for(hookId).find((r) => r.json.data.id === appId));
      assert.equal(TRACEPARENT.exec(String(delivered.headers.traceparent))?.[1], traceId);
      await waitFor('the job span', () => otlp.spans.find((x) => x.name === 'job webhook.deliver' && x.traceId === traceId));
    } finally {
      await second.close();
    }
  });
});

describe('traces off', () => {
  it('no endpoint: no traceparent on a delivery', async () => {
    const rx = await new Receiver().start();
    const s = await startServer({ env: { SLIPWAY_JOB_POLL_MS: '20' }, rateLimits: GENEROUS });
    try {
      const hook = expectStatus(await s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: rx.url }), 201);
      expectStatus(await app(s, 'untraced'), 201);
      const d = await waitFor('the delivery', () => rx.for(hook.id)[0]);
      assert.equal(d.headers.traceparent, undefined);
    } finally {
      await s.close();
      await rx.close();
    }
  });
});
