// Results of pure functions kept by their argument, for hot paths that compute the same few values
// again and again (a webhook delivery's endpoint check and signing key).

/**
 * `fn` with its results kept by argument: at most `max` of them, all dropped at once when that
 * many are held (the arguments seen in a burst are few; no eviction order is worth keeping).
 */
export function memoized<K, V>(fn: (k: K) => V, max = 1000): (k: K) => V {
  const kept = new Map<K, V>();
  return (k) => {
    if (kept.has(k)) return kept.get(k)!;
    const v = fn(k);
    if (kept.size >= max) kept.clear();
    kept.set(k, v);
    return v;
  };
}
