// Assertions shared by the foundation suites: the error body, the headers every response
// carries, and a guard against a rate-limit window ending in the middle of a test.
import assert from 'node:assert/strict';
import type { Response } from '../helpers/server.js';
import { sleep, UUID_RE } from '../helpers/util.js';

/** `x-request-id` (a UUID) and the three `x-ratelimit-*` headers. */
export function assertCommonHeaders(r: Response, limit?: number): { limit: number; remaining: number; reset: number } {
  assert.match(r.headers.get('x-request-id') ?? '', UUID_RE, 'x-request-id is a UUID');
  const get = (h: string) => {
    const v = r.headers.get(h);
    assert.ok(v !== null, `missing header ${h} on ${r.status} response`);
    assert.match(v, /^\d+$/, `${h} is a non-negative integer`);
    return Number(v);
  };
  const state = { limit: get('x-ratelimit-limit'), remaining: get('x-ratelimit-remaining'), reset: get('x-ratelimit-reset') };
  if (limit !== undefined) assert.equal(state.limit, limit, 'x-ratelimit-limit');
  assert.ok(state.remaining <= state.limit, 'remaining <= limit');
  assert.ok(state.reset >= 1 && state.reset <= 3600, `reset ${state.reset} within the window`);
  return state;
}

/**
 * Rate windows are fixed and aligned to the minute. A test that counts requests inside one window
 * waits for the next window only when the current one ends within `marginMs`.
 */
export async function awaitFreshWindow(windowSeconds = 60, marginMs = 3000): Promise<void> {
  const left = windowSeconds * 1000 - (Date.now() % (windowSeconds * 1000));
  if (left < marginMs) await sleep(left + 50);
}
