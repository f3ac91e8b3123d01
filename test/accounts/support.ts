// Helpers shared by the account suites (API keys, projects, users, device codes, operator surface).
import assert from 'node:assert/strict';
import type { TestServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';

export const TOKEN_RE = /^svl_[0-9a-f]{64}$/;
export const SCHEMA_MISMATCH = 'The request does not match the schema';

export const ROLE_NAMES = ['Company Admin', 'Company Developer', 'Company Billing', 'Company Viewer'] as const;
export type RoleName = (typeof ROLE_NAMES)[number];

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

/** The masked form the contract shows: the prefix, two characters after it, `...`, the last four. */
export const expectedMask = (token: string) => `${token.slice(0, 6)}...${token.slice(-4)}`;
