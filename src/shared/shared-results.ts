// Results that many requests are answered with at once (a cached or coalesced page): frozen, so
// that no caller can change what the others get, and marked, so that the router serializes each
// one once for all of them (`sharedResult`, `isSharedResult`).

const shared = new WeakSet<object>();

/** Freezes `result` and the objects and arrays directly in it (and their elements), and marks it shared. */
export function sharedResult<T extends object>(result: T): T {
  for (const v of Object.values(result)) {
    if (Array.isArray(v)) for (const e of v) if (e && typeof e === 'object') Object.freeze(e);
    if (v && typeof v === 'object') Object.freeze(v);
  }
  shared.add(Object.freeze(result));
  return result;
}

export const isSharedResult = (x: unknown): x is object => typeof x === 'object' && x !== null && shared.has(x);
