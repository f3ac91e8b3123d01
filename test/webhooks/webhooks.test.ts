import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, MISSING, sleep, waitFor } from '../helpers/util.js';
import { Receiver, emitNow, verify } from './support.js';
import {
  deliverJob,
  endpointProblem,
  guardedAgent,
  post,
  refusedAddress,
  retryDelayMs,
  webhookSettings,
  MAX_ATTEMPTS,
  RESPONSE_EXCERPT_BYTES,
} from '../../src/modules/webhooks/delivery.js';

// 1e-5 compresses the 12 retries (about 7.3 days) to about 6.3 s.
const ENV = { SLIPWAY_WEBHOOK_RETRY_SCALE: '0.00001', SLIPWAY_WEBHOOK_TIMEOUT_MS: '700', SLIPWAY_JOB_POLL_MS: '20' };

describe('webhook settings and guards (unit)', () => {
  it('reads settings from the environment with defaults', () => {
    assert.deepEqual(webhookSettings({}), { timeoutMs: 10_000, retryScale: 1, plainSecretHeader: true });
    assert.deepEqual(
      webhookSettings({ SLIPWAY_WEBHOOK_TIMEOUT_MS: '250', SLIPWAY_WEBHOOK_RETRY_SCALE: '0.0001', SLIPWAY_WEBHOOK_PLAIN_SECRET_HEADER: 'off' }),
      {
        timeoutMs: 250,
        retryScale: 0.0001,
        plainSecretHeader: false,
      },
    );
  });

  it('follows the retry schedule with a little jitter', () => {
    const minutes = [1, 5, 10, 30, 60, 120, 240, 480, 960, 1440, 2880, 4320];
    assert.equal(MAX_ATTEMPTS, 13);
    minutes.forEach((m, i) => {
      const d = retryDelayMs(i + 1, 1);
      assert.ok(d >= m * 60_000 * 0.9 && d <= m * 60_000 * 1.1, `retry ${i + 1}: ${d}`);
    });
  });

  it('refuses link-local and metadata addresses always, private ranges in production', () => {
    for (const a of ['169.254.169.254', '169.254.0.1', 'fd00:ec2::254', '::ffff:169.254.169.254', 'fe80::1']) {
      assert.ok(refusedAddress(a, false), a);
      assert.ok(refusedAddress(a, true), a);
    }
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '::1', 'fc00::1', '0.0.0.0']) {
      assert.equal(refusedAddress(a, false), null, a);
      assert.ok(refusedAddress(a, true), a);
    }
    assert.equal(refusedAddress('93.184.216.34', true), null);
    assert.match(endpointProblem('http://example.com/x', true)!, /https/);
    assert.equal(endpointProblem('http://example.com/x', false), null);
    assert.equal(endpointProblem('https://example.com/x', true), null);
    assert.ok(endpointProblem('http://169.254.169.254/latest/meta-data', false));
    assert.ok(endpointProblem('http://[fd00:ec2::254]/', false));
    assert.ok(endpointProblem('ftp://example.com/', false));
    assert.ok(endpointProblem('http://user:pw@example.com/', false));
  });

  it('checks resolved addresses at delivery time (a name that resolves to a refused address)', async () => {
    const r = await new Receiver().start();
    try {
      const url = r.url.replace('127.0.0.1', 'localhost');
      // Production mode: localhost resolves to loopback, refused at connect time (the form check passes for https only, so use the guard directly).
      const agent = guardedAgent(true, 2000);
      const res = await post(agent, 2000, url, {}, '{}');
      assert.equal(res.ok, false);
      assert.match(res.response!, /refused to connect: localhost resolves to/);
      assert.equal(r.received.length, 0);
      // Local mode allows loopback.
      const ok = await post(guardedAgent(false, 2000), 2000, url, {}, '{}');
      assert.equal(ok.ok, true);
      await agent.close();
    } finally {
      await r.close();
    }
  });
});

for (const kind of DB_KINDS) {
  describe(`webhooks [${kind}]`, { skip: await skipUnless(kind) }, () => {
    // The receiver is closed before the server (after hooks run in registration order).
    const rx = new Receiver();
    before(() => rx.start());
    after(() => rx.close());
    const s = useServer({ db: kind, env: ENV, rateLimits: GENEROUS });

    const create = async (body: Record<string, unknown> = {}, token?: string) =>
      expectStatus(await s.post('/webhooks', { allowed_events: ['APP_CREATE', 'APP_UPDATE'], endpoint: rx.url, ...body }, { token }), 201);
    const remove = async (id: string) => expectStatus(await s.delete(`/webhooks/${id}`), 200);
    const deliveries = async (id: string) => expectStatus(await s.get(`/webhooks/${id}/deliveries?limit=100`), 200);

    it('creates, reads, updates, toggles and deletes a webhook', async () => {
      const w = await create();
      assert.match(w.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
      assert.equal(w.is_enabled, true);
      assert.equal(w.description, '');
      assert.equal(w.old_secret, null);
      assert.equal(w.company_id, s.companyId);
      assert.deepEqual(w.allowed_events, ['APP_CREATE', 'APP_UPDATE']);
      assert.deepEqual(expectStatus(await s.get(`/webhooks/${w.id}`), 200), w);
      const l = expectStatus(await s.get('/webhooks'), 200);
      assert.ok(l.data.some((x: { id: string }) => x.id === w.id));
      const u = expectStatus(await s.patch(`/webhooks/${w.id}`, { description: 'ops', allowed_events: ['APP_DEPLOY'] }), 200);
      assert.equal(u.description, 'ops');
      assert.deepEqual(u.allowed_events, ['APP_DEPLOY']);
      assert.ok(u.updated_by);
      assert.equal(expectStatus(await s.patch(`/webhooks/${w.id}`, { description: null }), 200).description, '');
      assert.equal(expectStatus(await s.post(`/webhooks/${w.id}/toggle`), 200).is_enabled, false);
      assert.equal(expectStatus(await s.post(`/webhooks/${w.id}/toggle`), 200).is_enabled, true);
      await remove(w.id);
      assert.equal((await s.get(`/webhooks/${w.id}`)).status, 404);
      assert.equal((await s.get(`/webhooks/${w.id}/deliveries`)).status, 404);
      assert.equal((await s.get(`/webhooks/${MISSING}/deliveries/${MISSING}`)).status, 404);
    });

    it('validates endpoints and events', async () => {
      assert.equal((await s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: 'ftp://example.com/' })).status, 400);
      assert.equal((await s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: 'http://169.254.169.254/latest/meta-data' })).status, 400);
      assert.equal((await s.post('/webhooks', { allowed_events: [], endpoint: rx.url })).status, 400);
      assert.equal((await s.post('/webhooks', { allowed_events: ['NOPE'], endpoint: rx.url })).status, 400);
      const w = await create();
      assert.equal((await s.patch(`/webhooks/${w.id}`, { endpoint: 'http://[fd00:ec2::254]/x' })).status, 400);
      assert.equal((await s.post(`/webhooks/${w.id}/roll-secret`, { expire_in_hours: 25 })).status, 400);
      await remove(w.id);
    });

    it('allows at most 10 webhooks per company', async () => {
      const { token } = await s.newCompany();
      for (let i = 0; i < 10; i++) await create({}, token);
      const r = await s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: rx.url }, { token });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /at most 10/);
    });

    it('checks permissions and tenancy', async () => {
      const w = await create();
      const viewer = await s.newKey({ role: 'Company Viewer' });
      assert.equal((await s.get(`/webhooks/${w.id}`, { token: viewer.token })).status, 200);
      assert.equal((await s.get(`/webhooks/${w.id}/deliveries`, { token: viewer.token })).status, 200);
      const denied = await s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: rx.url }, { token: viewer.token });
      assert.equal(denied.status, 403);
      assert.match(denied.body.message, /WEBHOOK:CREATE/);
      assert.equal((await s.post(`/webhooks/${w.id}/toggle`, undefined, { token: viewer.token })).status, 403);
      assert.equal((await s.post(`/webhooks/${w.id}/roll-secret`, {}, { token: viewer.token })).status, 403);
      assert.equal((await s.delete(`/webhooks/${w.id}`, { token: viewer.token })).status, 403);
      const billing = await s.newKey({ role: 'Company Billing' });
      assert.equal((await s.get('/webhooks', { token: billing.token })).status, 403);
      const other = await s.newCompany();
      assert.equal((await s.get(`/webhooks/${w.id}`, { token: other.token })).status, 404);
      assert.equal((await s.get(`/webhooks/${w.id}/deliveries`, { token: other.token })).status, 404);
      assert.equal((await s.delete(`/webhooks/${w.id}`, { token: other.token })).status, 404);
      assert.ok(!expectStatus(await s.get('/webhooks', { token: other.token }), 200).data.some((x: { id: string }) => x.id === w.id));
      // Another company's events never reach this company's webhooks.
      const before = rx.for(w.id).length;
      await emitNow(s, 'APP_CREATE', { id: MISSING }, other.companyId);
      await s.app.jobs.idle();
      assert.equal(rx.for(w.id).length, before);
      await remove(w.id);
    });

    it('delivers signed events to subscribed webhooks only', async () => {
      const w = await create();
      const other = await create({ allowed_events: ['APP_DELETE'] });
      const e = await emitNow(s, 'APP_CREATE', { id: MISSING, name: 'x' });
      const got = await waitFor('delivery', () => rx.for(w.id)[0]);
      await s.app.jobs.idle();
      assert.equal(rx.for(other.id).length, 0);
      assert.equal(got.headers['content-type'], 'application/json');
      assert.equal(got.headers['svl-signature'], w.secret);
      assert.equal(got.headers['webhook-id'], e.id);
      assert.ok(verify(w.secret, got.headers, got.body));
      assert.ok(!verify(other.secret, got.headers, got.body));
      assert.ok(!verify(w.secret, got.headers, got.body + ' '));
      assert.equal(got.json.webhook_id, w.id);
      assert.equal(got.json.event_id, e.id);
      assert.equal(got.json.type, 'APP_CREATE');
      assert.equal(got.json.company_id, s.companyId);
      assert.deepEqual(got.json.data, { id: MISSING, name: 'x' });
      const l = await deliveries(w.id);
      assert.equal(l.total, 1);
      const d = l.data[0];
      assert.equal(d.id, got.json.event_delivery_id);
      assert.equal(d.status, 'SUCCESS');
      assert.equal(d.event_id, e.id);
      assert.equal(d.event_type, 'APP_CREATE');
      assert.equal(d.response_status, 200);
      assert.equal(d.response, 'ok');
      assert.equal(d.payload, got.body);
      assert.equal(d.endpoint, rx.url);
      assert.ok(d.sent_at && d.response_time_ms >= 0);
      assert.deepEqual(expectStatus(await s.get(`/webhooks/${w.id}/deliveries/${d.id}`), 200), d);
      assert.equal((await s.get(`/webhooks/${other.id}/deliveries/${d.id}`)).status, 404);
      await remove(w.id);
      await remove(other.id);
    });

    it('attempts that end together are recorded each with its own outcome (one statement for the burst)', async () => {
      // The receiver holds its answers until all the events' first attempts arrived, then answers
      // them at once: odd events 500 (retried, then answered 200), even ones 201; bodies name the event.
      const n = 8;
      const held: (() => void)[] = [];
      let holding = true;
      const release = () => {
        holding = false;
        for (const answer of held.splice(0)) answer();
      };
      const server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          const odd = Number(body.data.n) % 2 === 1;
          const answer = () => {
            if (!odd || body.event_delivery_id !== firstAttempt.get(body.event_id)) res.writeHead(201).end(`ok ${body.event_id}`);
            else res.writeHead(500).end(`no ${body.event_id}`);
          };
          if (!firstAttempt.has(body.event_id)) firstAttempt.set(body.event_id, body.event_delivery_id);
          if (!holding) return answer();
          held.push(answer);
          if (held.length === n) release();
        });
      });
      const firstAttempt = new Map<string, string>();
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const timer = setTimeout(release, 400);
      try {
        const w = await create({ endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` });
        const events = await Promise.all(Array.from({ length: n }, (_, i) => emitNow(s, 'APP_CREATE', { id: MISSING, n: i })));
        const l = await waitFor('every chain settled', async () => {
          const l = await deliveries(w.id);
          return l.total === n + n / 2 && l.data.every((d: { status: string }) => d.status === 'SUCCESS') && l;
        });
        for (const [i, e] of events.entries()) {
          const attempts = (l.data as any[]).filter((d) => d.event_id === e.id);
          const first = attempts.find((d) => d.id === firstAttempt.get(e.id));
          assert.equal(first.response_status, i % 2 ? 500 : 201, `event ${i}`);
          assert.equal(first.response, `${i % 2 ? 'no' : 'ok'} ${e.id}`);
          assert.ok(Number.isInteger(first.response_time_ms) && first.response_time_ms >= 0);
          assert.ok(first.sent_at);
          assert.equal(attempts.length, i % 2 ? 2 : 1);
          const retry = attempts.find((d) => d !== first);
          if (i % 2) assert.deepEqual([retry.response_status, retry.response], [201, `ok ${e.id}`]);
        }
        await remove(w.id);
      } finally {
        clearTimeout(timer);
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
      }
    });

    it('signs with both secrets during a roll-secret transition', async () => {
      const w = await create();
      const rolled = expectStatus(await s.post(`/webhooks/${w.id}/roll-secret`, { expire_in_hours: 2 }), 200);
      assert.notEqual(rolled.secret, w.secret);
      assert.equal(rolled.old_secret, w.secret);
      const exp = Date.parse(rolled.old_secret_expired_at) - Date.now();
      assert.ok(exp > 1.9 * 3600e3 && exp <= 2 * 3600e3, String(exp));
      await emitNow(s, 'APP_UPDATE', { id: MISSING });
      const got = await waitFor('delivery', () => rx.for(w.id)[0]);
      assert.equal(String(got.headers['webhook-signature']).split(' ').length, 2);
      assert.ok(verify(rolled.secret, got.headers, got.body));
      assert.ok(verify(w.secret, got.headers, got.body));
      assert.equal(got.headers['svl-signature'], rolled.secret);
      // Rolling again without a transition: only the newest secret signs.
      const again = expectStatus(await s.post(`/webhooks/${w.id}/roll-secret`, {}), 200);
      assert.equal(again.old_secret, null);
      assert.equal(again.old_secret_expired_at, null);
      await emitNow(s, 'APP_UPDATE', { id: MISSING });
      const second = await waitFor('second delivery', () => rx.for(w.id)[1]);
      assert.ok(verify(again.secret, second.headers, second.body));
      assert.ok(!verify(rolled.secret, second.headers, second.body));
      assert.ok(!verify(w.secret, second.headers, second.body));
      await remove(w.id);
    });

    it('retries a failing receiver exactly 12 times, then FAILED', async () => {
      const bad = await new Receiver().start();
      bad.behavior = { status: 500, body: 'boom' };
      try {
        const w = await create({ endpoint: bad.url });
        const e = await emitNow(s, 'APP_CREATE', { id: MISSING });
        const l = await waitFor(
          'FAILED',
          async () => {
            const l = await deliveries(w.id);
            return l.data.length && l.data.every((d: { status: string }) => d.status === 'FAILED') && l;
          },
          30_000,
        );
        await sleep(300);
        assert.equal(bad.received.length, 13); // the first attempt and 12 retries
        assert.equal(l.total, 13);
        const attempts = l.data as any[];
        assert.ok(attempts.every((d) => d.event_id === e.id && d.response_status === 500 && d.response === 'boom'));
        assert.equal(new Set(attempts.map((d) => d.id)).size, 13);
        assert.deepEqual(new Set(bad.received.map((r) => r.json.event_delivery_id)), new Set(attempts.map((d) => d.id)));
        assert.ok(bad.received.every((r) => r.json.event_id === e.id));
        // newest first
        const sent = attempts.map((d) => Date.parse(d.sent_at));
        assert.deepEqual(
          sent,
          [...sent].sort((a, b) => b - a),
        );
        // the gaps grow with the schedule
        const at = bad.received.map((r) => r.at);
        assert.ok(at[12]! - at[11]! > at[2]! - at[1]!);
        await remove(w.id);
      } finally {
        await bad.close();
      }
    });

    it('ends SUCCESS when the receiver recovers mid-way', async () => {
      const flaky = await new Receiver().start();
      flaky.behavior = (_r, n) => (n <= 3 ? { status: 503 } : { status: 204 });
      try {
        const w = await create({ endpoint: flaky.url });
        await emitNow(s, 'APP_CREATE', { id: MISSING });
        await waitFor('SUCCESS', async () => (await deliveries(w.id)).data[0]?.status === 'SUCCESS');
        await s.app.jobs.idle();
        assert.equal(flaky.received.length, 4);
        const l = await deliveries(w.id);
        assert.equal(l.total, 4);
        assert.ok(l.data.every((d: { status: string }) => d.status === 'SUCCESS'));
        assert.deepEqual(
          l.data.map((d: { response_status: number }) => d.response_status),
          [204, 503, 503, 503],
        );
        await remove(w.id);
      } finally {
        await flaky.close();
      }
    });

    it('does not follow redirects', async () => {
      const target = await new Receiver().start();
      const redirecting = await new Receiver().start();
      redirecting.behavior = { redirect: target.url };
      try {
        const w = await create({ endpoint: redirecting.url });
        await emitNow(s, 'APP_CREATE', { id: MISSING });
        const d = await waitFor('first attempt', async () => (await deliveries(w.id)).data.find((x: { sent_at: string | null }) => x.sent_at));
        assert.equal(d.response_status, 302);
        assert.match(d.response, /Redirect not followed/);
        assert.equal(d.status, 'PENDING'); // a failure: retried
        await remove(w.id);
        await sleep(100);
        assert.equal(target.received.length, 0);
      } finally {
        await target.close();
        await redirecting.close();
      }
    });

    it('never sends to a metadata address, even if one got stored', async () => {
      const w = await create();
      // Bypass the API's check, as if the endpoint had been stored before the rule existed.
      await s.app.database.db.updateTable('webhooks').set({ endpoint: 'http://169.254.169.254/latest/meta-data' }).where('id', '=', w.id).execute();
      await emitNow(s, 'APP_CREATE', { id: MISSING });
      const d = await waitFor('first attempt', async () => (await deliveries(w.id)).data.find((x: { sent_at: string | null }) => x.sent_at));
      assert.equal(d.response_status, null);
      assert.match(d.response, /Not sent: .*link-local or cloud-metadata/);
      assert.equal(d.response_time_ms, 0);
      await remove(w.id);
    });

    it('times out a receiver that hangs', async () => {
      const slow = await new Receiver().start();
      slow.behavior = { hang: true };
      try {
        const w = await create({ endpoint: slow.url });
        await emitNow(s, 'APP_CREATE', { id: MISSING });
        const d = await waitFor('first attempt', async () => (await deliveries(w.id)).data.find((x: { sent_at: string | null }) => x.sent_at), 10_000);
        assert.match(d.response, /timed out after 700 ms/);
        assert.equal(d.response_status, null);
        assert.ok(d.response_time_ms >= 650 && d.response_time_ms < 3000, String(d.response_time_ms));
        await remove(w.id);
      } finally {
        await slow.close();
      }
    });

    it('keeps only a bounded excerpt of a huge response', async () => {
      const big = await new Receiver().start();
      big.behavior = { status: 200, body: 'x'.repeat(5 * 1024 * 1024) };
      try {
        const w = await create({ endpoint: big.url });
        await emitNow(s, 'APP_CREATE', { id: MISSING });
        const d = await waitFor('SUCCESS', async () => (await deliveries(w.id)).data.find((x: { status: string }) => x.status === 'SUCCESS'));
        assert.equal(d.response.length, RESPONSE_EXCERPT_BYTES);
        await remove(w.id);
      } finally {
        await big.close();
      }
    });

    it('sends nothing to a disabled webhook', async () => {
      const w = await create();
      expectStatus(await s.post(`/webhooks/${w.id}/toggle`), 200);
      await emitNow(s, 'APP_CREATE', { id: MISSING });
      await s.app.jobs.idle();
      await sleep(100);
      assert.equal(rx.for(w.id).length, 0);
      assert.equal((await deliveries(w.id)).total, 0);
      await remove(w.id);
    });

    it('stops pending retries when the webhook is disabled or deleted', async () => {
      const bad = await new Receiver().start();
      bad.behavior = { status: 500 };
      try {
        const w = await create({ endpoint: bad.url });
        await emitNow(s, 'APP_CREATE', { id: MISSING });
        await waitFor('two attempts', () => bad.received.length >= 2);
        await remove(w.id);
        const n = bad.received.length;
        await sleep(2500); // retries 3..10 would have happened by now
        assert.ok(bad.received.length <= n + 1, `${bad.received.length} > ${n + 1}`); // at most one in flight
        const jobs = await s.app.database.db
          .selectFrom('jobs')
          .select('status')
          .where('subject_id', '=', w.id)
          .where('status', 'in', ['queued', 'running'])
          .execute();
        assert.equal(jobs.length, 0);

        const w2 = await create({ endpoint: bad.url });
        const before = bad.received.length;
        await emitNow(s, 'APP_CREATE', { id: MISSING });
        await waitFor('first attempt', () => bad.received.length > before);
        expectStatus(await s.post(`/webhooks/${w2.id}/toggle`), 200);
        const l = await waitFor('FAILED', async () => {
          const l = await deliveries(w2.id);
          return l.data.every((d: { status: string }) => d.status === 'FAILED') && l;
        });
        assert.match(l.data[0].response, /webhook is disabled/);
        const settled = bad.received.length;
        await sleep(1000);
        assert.equal(bad.received.length, settled); // nothing more once the chain is FAILED
        await remove(w2.id);
      } finally {
        await bad.close();
      }
    });

    it(
      'a deletion while attempts are being recorded waits for them: no deadlock, no 500',
      { skip: kind !== 'postgres' && 'row locks: PostgreSQL only' },
      async () => {
        // The job runner is stopped and the test records two attempts itself, in one transaction held
        // open across the deletion: the second attempt first, then, once the deletion waits, the
        // first. A deletion that removed the attempts in the table's order before taking the
        // webhook's lock would hold the first row and wait for the second, while the record waited
        // for the first: a deadlock, one of the two rolled back (PostgreSQL's deadlock_timeout later).
        const db = s.app.database.db;
        const w = await create();
        await s.app.jobs.stop();
        try {
          await emitNow(s, 'APP_CREATE', { id: MISSING, n: 1 });
          await emitNow(s, 'APP_CREATE', { id: MISSING, n: 2 });
          const attempts = await db.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', w.id).orderBy('created_at').execute();
          assert.equal(attempts.length, 2);
          const job = deliverJob(s.app);
          const sent = (await Promise.all(attempts.map((a) => job.run(db, { payload: { deliveryId: a.id } } as any)))) as any[];
          assert.ok(
            sent.every((o) => typeof o?.record === 'function'),
            'both attempts were sent and wait to be recorded',
          );
          const waiting = async () => {
            const r = await sql<{
              n: number;
            }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(db);
            return r.rows[0]!.n > 0;
          };
          let deleted: ReturnType<typeof s.delete> | undefined;
          await db.transaction().execute(async (tx) => {
            await sent[1].record(tx);
            deleted = s.delete(`/webhooks/${w.id}`);
            await waitFor('the deletion waits for the record', waiting);
            await sent[0].record(tx);
          });
          expectStatus(await deleted!, 200);
          assert.equal((await db.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', w.id).execute()).length, 0);
          expectStatus(await s.get(`/webhooks/${w.id}`), 404);
        } finally {
          await s.app.jobs.start();
        }
      },
    );

    it('paginates deliveries newest first', async () => {
      const w = await create();
      for (let i = 0; i < 5; i++) {
        await emitNow(s, 'APP_UPDATE', { id: MISSING, n: i });
        await sleep(3);
      }
      await waitFor('five deliveries', () => rx.for(w.id).length >= 5);
      await s.app.jobs.idle();
      const p1 = expectStatus(await s.get(`/webhooks/${w.id}/deliveries?limit=2`), 200);
      const p2 = expectStatus(await s.get(`/webhooks/${w.id}/deliveries?limit=2&offset=2`), 200);
      assert.equal(p1.total, 5);
      const all = [...p1.data, ...p2.data].map((d: { payload: string }) => JSON.parse(d.payload).data.n);
      assert.deepEqual(all, [4, 3, 2, 1]);
      await remove(w.id);
    });
  });
}
