// Assertions shared by the foundation suites: the error body, the headers every response
// carries, and a guard against a rate-limit window ending in the middle of a test.
import assert from 'node:assert/strict';
import type { Response } from '../helpers/server.js';

export const UUID_V4ISH = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The contract's error body: `{message, status, data?}` and nothing else; returns the message. */
export function assertErrorBody(r: Response, status: number, opts: { data?: 'absent' | 'allowed' } = {}): string {
  assert.equal(r.status, status, `expected ${status}, got ${r.status}: ${r.text}`);
  assert.ok(r.body && typeof r.body === 'object' && !Array.isArray(r.body), `error body is not an object: ${r.text}`);
  const keys = Object.keys(r.body).sort();
  for (const k of keys) assert.ok(['data', 'message', 'status'].includes(k), `unexpected property "${k}" in error body ${r.text}`);
  assert.equal(typeof r.body.message, 'string');
  assert.ok(r.body.message.length > 0, 'error message is empty');
  assert.equal(r.body.status, status, 'body.status equals the HTTP status');
  if (opts.data === 'absent') assert.ok(r.body.data === undefined || Object.keys(r.body.data).length === 0, `data should be empty or absent: ${r.text}`);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  return r.body.message as string;
}

/** `x-request-id` (a UUID) and the three `x-ratelimit-*` headers. */
export function assertCommonHeaders(r: Response, limit?: number): { limit: number; remaining: number; reset: number } {
  assert.match(r.headers.get('x-request-id') ?? '', UUID_V4ISH, 'x-request-id is a UUID');
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
  if (left < marginMs) await new Promise((r) => setTimeout(r, left + 50));
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

export const unique = (prefix: string) => `${prefix} ${Math.random().toString(36).slice(2, 10)}`;
