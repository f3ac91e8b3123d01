// Crash recovery of database operations on SQLite: a restore and a restart are under way when the
// server process is SIGKILLed; restarted on the same data directory, it finishes both (they are
// durable jobs) and the databases reach a final status with the expected data.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { ok, startChild, type ChildServer } from '../helpers/process.js';
import { DATABASE_FINAL, untilStatus } from '../helpers/status.js';
import { sleep } from '../helpers/util.js';
import { DATABASE_RESOURCE_TYPES, DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';

async function waitFinal(base: string, token: string, id: string) {
  return untilStatus(`database ${id} to reach a final status`, () => ok(base, token, 'GET', `/databases/${id}`, 200), {
    statuses: DATABASE_FINAL,
    timeoutMs: 60_000,
    intervalMs: 100,
  });
}

function readRows(dir: string, ids: string[]) {
  const file = new SQLite(join(dir, 'slipway.db'), { readonly: true });
  try {
    return ids.map(
      (id) =>
        file.prepare('SELECT id, status, operation, data_version FROM databases WHERE id = ?').get(id) as {
          id: string;
          status: string;
          operation: string | null;
          data_version: number;
        },
    );
  } finally {
    file.close();
  }
}

describe('database crash recovery on SQLite: SIGKILL mid-operation and restart on the same data directory', { timeout: 120_000 }, () => {
  const token = `svl_${randomBytes(32).toString('hex')}`;
  let dir: string;
  let first: ChildServer | undefined;
  let second: ChildServer | undefined;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'slipway-db-crash-'));
  });
  after(async () => {
    await Promise.all([first?.stop('SIGKILL'), second?.stop('SIGKILL')]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('finishes an interrupted restore and an interrupted restart', { timeout: 120_000 }, async (t) => {
    const env = {
      DATA_DIR: dir,
      SLIPWAY_BOOTSTRAP_TOKEN: token,
      SLIPWAY_SECRET_KEY: 'db-crash-secret',
      SLIPWAY_SIM_PROGRESSION: '*=immediate,restore=duration:1500,restart=duration:1500',
    };
    first = await startChild([], env);
    const base = first.baseUrl;
    const body = (name: string) => ({
      display_name: name,
      type: 'postgresql',
      version: '17',
      cluster_id: DEFAULT_CLUSTER.id,
      resource_type_id: DATABASE_RESOURCE_TYPES[0]!.id,
      db_name: 'data',
      db_password: 'Secret_1',
    });
    const src = await ok(base, token, 'POST', '/databases', 201, body('crash source'));
    const other = await ok(base, token, 'POST', '/databases', 201, body('crash restart'));
    await waitFinal(base, token, src.id);
    await waitFinal(base, token, other.id);
    // Source content: two writes, an external dump of it, then one more write.
    await ok(base, token, 'PATCH', `/databases/${src.id}`, 200, { display_name: 'w1' });
    await ok(base, token, 'PATCH', `/databases/${src.id}`, 200, { display_name: 'w2' });
    await ok(base, token, 'POST', `/databases/${src.id}/backup-targets`, 202, { bucket_name: 'b', access_key: 'a', secret_key: 's' });
    await ok(base, token, 'POST', `/databases/${src.id}/external-backups`, 202, { name: 'crash' });
    let backups: { id: string }[] = [];
    for (let i = 0; i < 100 && !backups.length; i++, await sleep(50)) backups = await ok(base, token, 'GET', `/databases/${src.id}/external-backups`, 200);
    assert.equal(backups.length, 1);
    await ok(base, token, 'PATCH', `/databases/${src.id}`, 200, { display_name: 'w3' });
    await ok(base, token, 'PATCH', `/databases/${other.id}`, 200, { display_name: 'o1' });
    const otherVersion = readRows(dir, [other.id])[0]!.data_version;

    await ok(base, token, 'POST', `/databases/${src.id}/external-backups/${backups[0]!.id}/restore`, 202, null);
    await ok(base, token, 'POST', `/databases/${other.id}/restart`, 200);
    first.child.kill('SIGKILL');
    await first.stop();
    assert.equal(first.child.signalCode, 'SIGKILL');

    const [s1, o1] = readRows(dir, [src.id, other.id]);
    t.diagnostic(`at the crash: source ${s1!.status}/${s1!.operation}, other ${o1!.status}/${o1!.operation}`);
    assert.equal(s1!.status, 'restoring');
    assert.equal(o1!.status, 'updating');

    second = await startChild([], env);
    const s2 = await waitFinal(second.baseUrl, token, src.id);
    const o2 = await waitFinal(second.baseUrl, token, other.id);
    assert.equal(s2.status, 'ready');
    assert.equal(o2.status, 'ready');
    const [sr, or] = readRows(dir, [src.id, other.id]);
    assert.equal(sr!.data_version, 2, 'restored to the content of the dump (two writes)');
    assert.equal(or!.data_version, otherVersion, 'restart preserved the data');
    assert.equal(sr!.operation, null);
    assert.equal(or!.operation, null);
  });
});
