// Shared results: a page answered to many requests is frozen and marked once; a view of it (the
// response shape a list maps its rows to) is made once per shared result and shared in turn.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isSharedResult, sharedResult, sharedView } from '../../src/shared/shared-results.js';

describe('shared results', () => {
  const view = (r: { data: { n: number }[] }) => ({ ...r, data: r.data.map((x) => ({ ...x, even: x.n % 2 === 0 })) });

  it('a view of a shared result is made once, frozen and shared; the rows it answers with are the mapped ones', () => {
    let made = 0;
    const counted = (r: { data: { n: number }[] }) => (made++, view(r));
    const page = sharedResult({ data: [{ n: 1 }, { n: 2 }], total: 2 });
    const a = sharedView(page, counted);
    const b = sharedView(page, counted);
    assert.equal(a, b);
    assert.equal(made, 1);
    assert.ok(isSharedResult(a));
    assert.ok(Object.isFrozen(a) && Object.isFrozen(a.data[0]));
    assert.deepEqual(a, {
      data: [
        { n: 1, even: false },
        { n: 2, even: true },
      ],
      total: 2,
    });
    // Another shared result (the next page, or the same page after a change) gets its own view.
    const next = sharedResult({ data: [{ n: 4 }], total: 1 });
    assert.notEqual(sharedView(next, counted), a);
    assert.equal(made, 2);
  });

  it('a result that is not shared gets a new view each time, not marked shared', () => {
    const page = { data: [{ n: 3 }], total: 1 };
    const a = sharedView(page, view);
    assert.notEqual(sharedView(page, view), a);
    assert.equal(isSharedResult(a), false);
    assert.deepEqual(a.data, [{ n: 3, even: false }]);
  });
});
