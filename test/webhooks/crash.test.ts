// Deliveries are durable: 500 events owed to a webhook whose receiver is stalled, the server is
// SIGKILLed mid-flight and restarted on the same SQLite file; every event reaches the receiver
// with a 2xx at least once, and the receiver sees no event that was not recorded.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { sleep, waitFor } from '../helpers/util.js';
import SQLite from 'better-sqlite3';
import { call, rateEnv, startChild, type ChildServer } from '../helpers/process.js';
import { GENEROUS } from '../helpers/server.js';
import { DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { Receiver } from './support.js';

const EVENTS = 500;

describe('webhook deliveries survive a crash [sqlite, child process]', () => {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-webhook-crash-'));
  const token = `svl_${randomBytes(32).toString('hex')}`;
  const env = {
    SLIPWAY_BOOTSTRAP_TOKEN: token,
    SLIPWAY_SECRET_KEY: 'webhook-crash-secret',
    ...rateEnv(GENEROUS),
    SLIPWAY_JOB_POLL_MS: '20',
    SLIPWAY_WEBHOOK_TIMEOUT_MS: '3000',
    SLIPWAY_WEBHOOK_RETRY_SCALE: '0.00001',
  };
  let server: ChildServer | undefined;
  const rx = new Receiver();
  after(async () => {
    await server?.stop('SIGKILL');
    await rx.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers every owed event at least once after SIGKILL and restart', async () => {
    await rx.start();
    server = await startChild(['--data-dir', dir], env);
    const base = server.baseUrl;
    const app = await call(base, 'POST', '/applications', token, {
      display_name: 'crash app',
      cluster_id: DEFAULT_CLUSTER.id,
      source: 'dockerImage',
      docker_image: 'nginx:1.27',
    });
    assert.equal(app.status, 201);
    rx.behavior = { hang: true }; // stalled receiver: deliveries pile up, some in flight
    const hook = await call(base, 'POST', '/webhooks', token, { allowed_events: ['APP_UPDATE'], endpoint: rx.url });
    assert.equal(hook.status, 201);

    let next = 0;
    const worker = async () => {
      while (next < EVENTS) {
        const i = next++;
        const r = await call(base, 'PATCH', `/applications/${app.body.id}`, token, { display_name: `crash app ${i}` });
        assert.equal(r.status, 200);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    await waitFor('deliveries in flight', () => rx.received.length >= 4, 10_000);
    await server.stop('SIGKILL');
    server = undefined;
    rx.dropHanging();
    rx.behavior = { status: 200, body: 'ok' };

    server = await startChild(['--data-dir', dir], env);
    const db = new SQLite(join(dir, 'slipway.db'), { readonly: true, fileMustExist: true });
    try {
      const owed = db.prepare(`SELECT id FROM events WHERE type = 'APP_UPDATE'`).all() as { id: string }[];
      assert.equal(owed.length, EVENTS);
      const owedIds = new Set(owed.map((e) => e.id));
      await waitFor(
        'every owed event acknowledged',
        () => {
          const acked = new Set(rx.acked.map((r) => r.json.event_id));
          return [...owedIds].every((id) => acked.has(id));
        },
        60_000,
      );
      // No event the receiver was not owed.
      for (const r of rx.received) assert.ok(owedIds.has(r.json.event_id), `unexpected event ${r.json.event_id}`);
      // Every chain settles SUCCESS.
      await waitFor(
        'all chains SUCCESS',
        () => (db.prepare(`SELECT count(*) AS n FROM webhook_deliveries WHERE status != 'SUCCESS'`).get() as { n: number }).n === 0,
        20_000,
      );
      const chains = (db.prepare(`SELECT count(DISTINCT chain_id) AS n FROM webhook_deliveries`).get() as { n: number }).n;
      assert.equal(chains, EVENTS);
      await sleep(200);
      const dupes = rx.acked.length - new Set(rx.acked.map((r) => r.json.event_id)).size;
      console.log(`# received ${rx.received.length} requests, ${rx.acked.length} acknowledged, ${dupes} duplicate acknowledgements`);
    } finally {
      db.close();
    }
  });
});
