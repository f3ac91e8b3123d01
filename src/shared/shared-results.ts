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

const derived = new WeakMap<object, WeakMap<object, object>>();

/**
 * `view(result)`, made once per shared result and shared in turn (so a page mapped to its response
 * shape is mapped, and then serialized, once for all the requests it answers); for a result that
 * is not shared, made anew. `view` must be one function per call site (it keys the cache).
 */
export function sharedView<T extends object, V extends object>(result: T, view: (r: T) => V): V {
  if (!isSharedResult(result)) return view(result);
  let byView = derived.get(view);
  if (!byView) derived.set(view, (byView = new WeakMap()));
  let v = byView.get(result) as V | undefined;
  if (!v) byView.set(result, (v = sharedResult(view(result))));
  return v;
}
