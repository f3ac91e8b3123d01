// Resource ids: version 7 UUIDs (time first, then random digits), and the digits of an id that
// names derived from it use (the random ones of a version 7 id, the first ones of an older id).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { idDigits, newId, randomHex, UUID_RE } from '../../src/shared/ids.js';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const timeOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);

describe('resource ids', () => {
  it('are version 7 UUIDs whose first 48 bits are the time they were made, in milliseconds', () => {
    const before = Date.now();
    const ids = Array.from({ length: 2000 }, newId);
    const after = Date.now();
    for (const id of ids) {
      assert.match(id, V7);
      assert.match(id, UUID_RE);
      assert.ok(timeOf(id) >= before && timeOf(id) <= after, `${id} made between ${before} and ${after}`);
    }
    assert.equal(new Set(ids).size, ids.length, 'no two alike');
    // Ids of a later millisecond sort after those of an earlier one (so inserts land together in indexes).
    for (let i = 1; i < ids.length; i++) if (timeOf(ids[i]!) > timeOf(ids[i - 1]!)) assert.ok(ids[i]! > ids[i - 1]!);
  });

  it('random hex values have the length asked for, never repeat, and keep coming across refills of their pool', () => {
    // 20 bytes each: 500 of them draw 10,000 bytes, more than twice the 4 KiB pool.
    const values = Array.from({ length: 500 }, () => randomHex(20));
    for (const v of values) assert.match(v, /^[0-9a-f]{40}$/);
    assert.equal(new Set(values).size, values.length, 'no two alike');
    // Every byte value turns up (a stuck or zeroed pool would not).
    assert.equal(new Set(values.join('').match(/../g)).size, 256);
    assert.throws(() => randomHex(5000), RangeError);
  });

  it('names derived from an id use its random digits; an older (version 4) id keeps its first digits', () => {
    const a = newId();
    const b = newId();
    assert.equal(idDigits(a, 8), a.replace(/-/g, '').slice(-8));
    assert.notEqual(idDigits(a, 8), idDigits(b, 8), 'ids made in the same moment give different names');
    const old = '9b2f6c1e-3d4a-4b5c-8d6e-7f8091a2b3c4';
    assert.equal(idDigits(old, 8), '9b2f6c1e');
    assert.equal(idDigits(old, 12), '9b2f6c1e3d4a');
  });
});

for (const kind of DB_KINDS) {
  describe(`ids of created resources [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind });
    it('a created resource has a version 7 id of the moment it was created', async () => {
      const before = Date.now();
      const r = await s.post('/projects', { display_name: 'Id time' });
      assert.equal(r.status, 201);
      assert.match(r.body.id, V7);
      const t = timeOf(r.body.id);
      assert.ok(t >= before && t <= Date.now());
      assert.ok(Math.abs(t - Date.parse(r.body.created_at)) < 1000, 'close to created_at');
    });
  });
}
