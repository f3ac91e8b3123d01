// An unexpected failure is a 500 with the error body and a unique support reference in data.code,
// and it is written to the log with that reference and the stack.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { useServer } from '../helpers/server.js';

describe('unexpected server errors', () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const s = useServer({ logger: { level: 'error', stream: sink } });
  before(async () => {
    // Break the storage under a route: the projects table disappears.
    await sql`DROP TABLE project_services`.execute(s.app.database.db);
    await sql`DROP TABLE projects`.execute(s.app.database.db);
  });

  it('answers 500 with data.code, a unique reference also logged with the stack', async () => {
    const a = await s.get('/projects');
    const b = await s.get('/projects');
    assert.equal(a.status, 500);
    assert.deepEqual(Object.keys(a.body).sort(), ['data', 'message', 'status']);
    assert.equal(a.body.status, 500);
    assert.match(a.body.data.code, /^ERR-[0-9a-f-]{36}$/);
    assert.notEqual(a.body.data.code, b.body.data.code);
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.code === a.body.data.code);
    assert.ok(logged, 'the reference is in the log');
    assert.ok(String(logged.err?.stack ?? '').includes('projects'), 'with the stack of the failure');
    assert.ok(a.headers.get('x-request-id'));
  });
});
