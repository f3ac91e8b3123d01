// Helpers shared by the account suites (API keys, projects, users, device codes, operator surface).
import assert from 'node:assert/strict';
import type { Response, TestServer } from '../helpers/server.js';

export const TOKEN_RE = /^svl_[0-9a-f]{64}$/;
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const SCHEMA_MISMATCH = 'The request does not match the schema';

export const ROLE_NAMES = ['Company Admin', 'Company Developer', 'Company Billing', 'Company Viewer'] as const;
export type RoleName = (typeof ROLE_NAMES)[number];

/** The error body `{message, status, data?}` with the expected status; returns the message. */
export function assertError(r: Response, status: number, message?: RegExp | string): string {
  assert.equal(r.status, status, `expected ${status}, got ${r.status}: ${r.text}`);
  assert.ok(r.body && typeof r.body === 'object' && !Array.isArray(r.body), `error body is not an object: ${r.text}`);
  for (const k of Object.keys(r.body)) assert.ok(['message', 'status', 'data'].includes(k), `unexpected property "${k}" in ${r.text}`);
  assert.equal(r.body.status, status);
  assert.equal(typeof r.body.message, 'string');
  assert.ok(r.body.message.length > 0, 'the error message is empty');
  if (typeof message === 'string') assert.equal(r.body.message, message);
  else if (message) assert.match(r.body.message, message);
  return r.body.message as string;
}

/** Asserts the status, printing the body when it differs; returns the body. */
export function expectStatus<T = any>(r: Response<T>, status: number): T {
  assert.equal(r.status, status, `expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
}

/** Role ids by name, read from the API. */
export async function roleIds(s: TestServer): Promise<Record<RoleName, string>> {
  const r = await s.get('/resources/rbac/api-key-roles');
  expectStatus(r, 200);
  const out: Partial<Record<RoleName, string>> = {};
  for (const role of r.body as { id: string; name: RoleName }[]) out[role.name] = role.id;
  for (const n of ROLE_NAMES) assert.ok(out[n], `role ${n} is listed`);
  return out as Record<RoleName, string>;
}

/** The id of the key behind `token`. */
export async function keyIdOf(s: TestServer, token: string): Promise<string> {
  const r = await s.get('/api-keys/me', { token });
  expectStatus(r, 200);
  return r.body.id as string;
}

/** Every item of a paginated list (follows offset/limit until total). */
export async function listAll<T = any>(s: TestServer, path: string, token?: string): Promise<T[]> {
  const out: T[] = [];
  for (let offset = 0; ; offset += 100) {
    const r = await s.get(`${path}${path.includes('?') ? '&' : '?'}limit=100&offset=${offset}`, { token });
    expectStatus(r, 200);
    out.push(...(r.body.data as T[]));
    if (offset + 100 >= r.body.total) return out;
  }
}

/** The masked form the contract shows: the prefix, two characters after it, `...`, the last four. */
export const expectedMask = (token: string) => `${token.slice(0, 6)}...${token.slice(-4)}`;
