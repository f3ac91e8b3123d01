// The coalescing primitive behind shared reads and rate-limit counts (src/shared/coalesce.ts):
// one run per key at a time; calls made while a run is in flight share the next run, never the
// one in flight (which began before they were made).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Coalescer } from '../../src/shared/coalesce.js';

/** A run that ends when the test says so, recording the items it was given. */
function controlled() {
  const runs: { items: string[]; finish: (e?: Error) => void }[] = [];
  const c = new Coalescer<string, string>(
    (key, items) =>
      new Promise((resolve, reject) => {
        const n = runs.length + 1;
        runs.push({ items, finish: (e) => (e ? reject(e) : resolve(items.map((i) => `${key}:${i}@run${n}`))) });
      }),
  );
  return { c, runs };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('coalescing', () => {
  it('a call for an idle key runs at once, alone', async () => {
    const { c, runs } = controlled();
    const a = c.call('k', 'a');
    assert.equal(runs.length, 1);
    assert.deepEqual(runs[0]!.items, ['a']);
    runs[0]!.finish();
    assert.equal(await a, 'k:a@run1');
  });

  it('calls made while a run is in flight wait for it and share the next run, in arrival order', async () => {
    const { c, runs } = controlled();
    const a = c.call('k', 'a');
    const b = c.call('k', 'b');
    const d = c.call('k', 'd');
    await tick();
    assert.equal(runs.length, 1, 'no second run while the first is in flight');
    runs[0]!.finish();
    assert.equal(await a, 'k:a@run1');
    await tick();
    assert.equal(runs.length, 2);
    assert.deepEqual(runs[1]!.items, ['b', 'd']);
    runs[1]!.finish();
    assert.deepEqual(await Promise.all([b, d]), ['k:b@run2', 'k:d@run2']);
    // The key is idle again: the next call runs at once.
    const e = c.call('k', 'e');
    assert.equal(runs.length, 3);
    runs[2]!.finish();
    assert.equal(await e, 'k:e@run3');
  });

  it('keys are independent', async () => {
    const { c, runs } = controlled();
    const a = c.call('x', 'a');
    const b = c.call('y', 'b');
    assert.equal(runs.length, 2);
    runs[1]!.finish();
    runs[0]!.finish();
    assert.deepEqual(await Promise.all([a, b]), ['x:a@run1', 'y:b@run2']);
  });

  it('a failed run fails its own calls only; the waiting ones get a run of their own', async () => {
    const { c, runs } = controlled();
    const a = c.call('k', 'a');
    const b = c.call('k', 'b');
    runs[0]!.finish(new Error('lost'));
    await assert.rejects(a, /lost/);
    await tick();
    assert.equal(runs.length, 2);
    runs[1]!.finish();
    assert.equal(await b, 'k:b@run2');
  });

  it('gathering: calls made in the same turn of the event loop run together even with nothing in flight', async () => {
    const batches: string[][] = [];
    const c = new Coalescer<string, string>(async (_key, items) => {
      batches.push(items);
      return items;
    }, true);
    const out = await Promise.all([c.call('k', 'a'), c.call('k', 'b'), c.call('k', 'd')]);
    assert.deepEqual(out, ['a', 'b', 'd']);
    assert.deepEqual(batches, [['a', 'b', 'd']]);
    await c.call('k', 'e');
    assert.deepEqual(batches, [['a', 'b', 'd'], ['e']]);
  });

  it('a run that throws at once fails its calls', async () => {
    const c = new Coalescer<string, string>(() => {
      throw new Error('no');
    });
    await assert.rejects(c.call('k', 'a'), /no/);
    await assert.rejects(c.call('k', 'b'), /no/);
  });
});
