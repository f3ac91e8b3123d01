// SQLite WAL checkpoints run in a worker thread (src/shared/db/checkpointer.ts), not inside the
// request that happens to cross SQLite's automatic threshold: what the API wrote reaches the
// database file itself (not only the WAL) shortly after, although the main connection's own
// automatic checkpoint only starts at a WAL far larger than these few writes.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { useServer } from '../helpers/server.js';

/** Project names in the database file alone: a copy of it without its WAL holds only checkpointed pages. */
function namesInMainFile(dataDir: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-ckpt-'));
  try {
    copyFileSync(join(dataDir, 'slipway.db'), join(dir, 'copy.db'));
    const copy = new SQLite(join(dir, 'copy.db'), { readonly: true });
    try {
      return (copy.prepare('SELECT display_name FROM projects').pluck().all() as string[]).sort();
    } finally {
      copy.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('SQLite checkpoints', () => {
  const s = useServer({ db: 'sqlite' });
  let token: string;
  before(async () => {
    ({ token } = await s.newCompany());
  });

  it('writes reach the database file within moments, checkpointed by the worker', async () => {
    const names = ['ckpt one', 'ckpt two', 'ckpt three'];
    for (const display_name of names) assert.equal((await s.post('/projects', { display_name }, { token })).status, 201);
    const deadline = Date.now() + 5000;
    let seen: string[] = [];
    while (Date.now() < deadline) {
      seen = namesInMainFile(s.app.config.dataDir).filter((n) => n.startsWith('ckpt '));
      if (seen.length === names.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(seen, [...names].sort());
  });
});
