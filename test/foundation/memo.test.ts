// Results kept by argument (src/shared/memo.ts): a webhook delivery's endpoint check and signing
// key are computed once per distinct value, and the kept results stay bounded.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { memoized } from '../../src/shared/memo.js';

describe('memoized', () => {
  it('computes a result once per argument, null and undefined results included', () => {
    const calls: string[] = [];
    const f = memoized((k: string) => {
      calls.push(k);
      return k === 'none' ? undefined : k === 'null' ? null : k.length;
    });
    for (let i = 0; i < 3; i++) {
      assert.equal(f('abc'), 3);
      assert.equal(f('none'), undefined);
      assert.equal(f('null'), null);
    }
    assert.deepEqual(calls, ['abc', 'none', 'null']);
  });

  it('keeps at most `max` results: once full, all are dropped and computed again', () => {
    const calls: number[] = [];
    const f = memoized((k: number) => (calls.push(k), k * 2), 2);
    assert.equal(f(1), 2);
    assert.equal(f(2), 4);
    assert.equal(f(1), 2);
    assert.deepEqual(calls, [1, 2]);
    // A third argument finds the cache full: it is cleared, so 1 is computed again afterwards.
    assert.equal(f(3), 6);
    assert.equal(f(3), 6);
    assert.equal(f(1), 2);
    assert.deepEqual(calls, [1, 2, 3, 1]);
  });
});
