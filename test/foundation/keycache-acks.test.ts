// The key cache's acknowledgements on PostgreSQL (src/shared/auth/keycache.ts): a process answers
// a change to a key only once every other listening process has acknowledged it. Here the other
// process is a stand-in connection, which acknowledges when the test says so, so that the order
// of the messages is the test's: one change's acknowledgement arrives before its own NOTIFY, while
// an earlier change is still being waited for.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import pg from 'pg';
import { skipUnless, useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/util.js';
import { ACK_CHANNEL, LISTENER_NAME, type KeyCache } from '../../src/shared/auth/keycache.js';
import type { Tx } from '../../src/shared/db/index.js';

/** What the test reads of the cache's waiting state (private: the order it tests is inside it). */
type Waiting = { acks: Map<string, { by: Set<number> }>; pending: Map<string, number> };
const acksOf = (keys: KeyCache) => (keys as unknown as Waiting).acks;
const pendingOf = (keys: KeyCache) => (keys as unknown as Waiting).pending;

describe('key cache acknowledgements [postgres]', { skip: await skipUnless('postgres') }, () => {
  const s = useServer({ db: 'postgres' });
  let other: pg.Client;
  let otherPid: number;

  before(async () => {
    other = new pg.Client({ connectionString: s.app.config.databaseUrl, application_name: LISTENER_NAME });
    // The suite's database is dropped (its connections terminated) before this suite's own `after`.
    other.on('error', () => {});
    await other.connect();
    otherPid = (await other.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  });
  after(async () => {
    await other?.end().catch(() => {});
  });

  const acknowledge = (id: string) => other.query('SELECT pg_notify($1, $2)', [ACK_CHANNEL, id]);

  it("keeps an acknowledgement that came before the change's own NOTIFY while another answer waits", async () => {
    const k = await s.newKey({ role: 'Company Viewer' });
    const { keys } = s.app;
    const db = s.app.database.db;
    const toggle = (tx: Tx, enabled: number) => tx.updateTable('api_keys').set({ is_enabled: enabled }).where('id', '=', k.id).execute();
    const txid = async (tx: Tx) => (await sql<{ id: string }>`SELECT txid_current()::text AS id`.execute(tx)).rows[0]!.id;

    // A first change, committed and back: its answer waits for the other process.
    const first = await db.transaction().execute(async (tx) => {
      await keys.changing(tx);
      await toggle(tx, 0);
      return txid(tx);
    });
    const firstAnswered = keys.announced(30_000);
    await waitFor('the first change back', () => acksOf(keys).has(first) && !pendingOf(keys).has(first));

    // A second change: the other process acknowledges it before it commits (it may hear of it
    // first: each connection gets the NOTIFY at its own pace), then acknowledges the first one.
    await db.transaction().execute(async (tx) => {
      await keys.changing(tx);
      await toggle(tx, 1);
      const second = await txid(tx);
      await acknowledge(second);
      await waitFor('the early acknowledgement', () => acksOf(keys).get(second)?.by.has(otherPid));
      await acknowledge(first);
      await waitFor('the first change acknowledged', () => !acksOf(keys).has(first));
      assert.ok(acksOf(keys).get(second)?.by.has(otherPid), "the second change's acknowledgement is kept while it is pending");
    });
    // Both answers come once the second change's NOTIFY is back: nothing is acknowledged twice.
    const guard = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), 10_000).unref());
    assert.equal(await Promise.race([Promise.all([firstAnswered, keys.announced(30_000)]).then(() => 'answered'), guard]), 'answered');
    assert.equal(acksOf(keys).size, 0);
  });
});
