// API keys: creation (token shown once), representation, update, toggle, rotation with an
// optional grace period for the old token, deletion.
import type { Static } from '@sinclair/typebox';
import type { CallContext } from '../../shared/context.js';
import type { ApiKeysTable } from '../../shared/db/schema.js';
import { badRequest, forbidden, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Page } from '../../shared/pagination.js';
import { computeGrants, grantsCover, isPermission, ROLE_BY_ID, type Capability, type Grants } from '../../shared/auth/rbac.js';
import { generateToken, hashToken, maskToken } from '../../shared/auth/tokens.js';
import type { ApiKey } from './schemas.js';
import { findLiveKey, insertApiKey, listLiveKeysPage, markKeyDeleted, updateKeyColumns } from './storage.js';

export type ApiKeyView = Static<typeof ApiKey>;
export type Source = ApiKeysTable['source'];

export interface KeySpec {
  name: string;
  role_ids?: string[];
  capabilities?: { permission: string; id_resource?: string | null }[];
  expired_at?: string | null;
  source?: Source;
  /** A fixed token (bootstrap/CI); otherwise a random one is generated. */
  token?: string;
}

export function toView(row: ApiKeysTable): ApiKeyView {
  const roleIds = JSON.parse(row.role_ids) as string[];
  return {
    id: row.id,
    company_id: row.company_id,
    name: row.name,
    is_enabled: !!row.is_enabled,
    source: row.source,
    masked_token: row.masked_token,
    roles: roleIds.flatMap((id) => {
      const r = ROLE_BY_ID.get(id);
      return r ? [{ id: r.id, name: r.name, description: r.description }] : [];
    }),
    capabilities: JSON.parse(row.capabilities) as Capability[],
    last_used_at: row.last_used_at,
    expired_at: row.expired_at,
    old_token_expired_at: row.old_token_expired_at && row.old_token_expired_at > new Date().toISOString() ? row.old_token_expired_at : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function checkRoles(roleIds: string[]): void {
  for (const id of roleIds) if (!ROLE_BY_ID.has(id)) throw badRequest(`Unknown role id ${id}; see GET /resources/rbac/api-key-roles`);
}

function normaliseCapabilities(caps: KeySpec['capabilities']): Capability[] {
  return (caps ?? []).map((c) => {
    if (!isPermission(c.permission))
      throw badRequest(`Unknown permission "${c.permission}": use <RESOURCE>:<ACTION> as listed by GET /resources/rbac/api-key-permissions`);
    return { id: newId(), permission: c.permission, id_resource: c.id_resource ?? null };
  });
}

/** A key may hand out only permissions it holds itself. */
function assertGrantable(caller: Grants | null, roleIds: string[], caps: Capability[]) {
  if (!caller) return;
  if (!grantsCover(caller, computeGrants(roleIds, caps)))
    throw forbidden('An API key cannot grant permissions it does not have itself; use a key with broader permissions.');
}

export async function createKey(ctx: CallContext, spec: KeySpec) {
  const { tx, app, companyId } = ctx;
  const roleIds = [...new Set(spec.role_ids ?? [])];
  checkRoles(roleIds);
  const caps = normaliseCapabilities(spec.capabilities);
  if (roleIds.length === 0 && caps.length === 0) throw badRequest('Give the key at least one role (role_ids) or capability');
  assertGrantable(ctx.grants, roleIds, caps);
  const now = new Date().toISOString();
  if (spec.expired_at && spec.expired_at <= now) throw badRequest('expired_at must be in the future');
  const token = spec.token ?? generateToken(app.config.brandPrefix);
  const row: ApiKeysTable = {
    id: newId(),
    company_id: companyId,
    name: spec.name,
    source: spec.source ?? 'EXTERNAL',
    token_hash: hashToken(token),
    masked_token: maskToken(token),
    old_token_hash: null,
    old_token_expired_at: null,
    is_enabled: 1,
    role_ids: JSON.stringify(roleIds),
    capabilities: JSON.stringify(caps),
    expired_at: spec.expired_at ? new Date(spec.expired_at).toISOString() : null,
    last_used_at: null,
    created_at: now,
    updated_at: now,
    deleted_at: null,
  };
  await insertApiKey(tx, row);
  return { id: row.id, token, name: row.name, row };
}

async function findKey({ tx, companyId }: CallContext, id: string): Promise<ApiKeysTable> {
  const row = await findLiveKey(tx, companyId, id);
  if (!row) throw notFound('API key');
  return row;
}

export async function getKey(ctx: CallContext, id: string): Promise<ApiKeyView> {
  return toView(await findKey(ctx, id));
}

export async function listKeys({ tx, companyId, scope }: CallContext, page: Page) {
  const res = await listLiveKeysPage(tx, companyId, scope, page);
  return { ...res, data: res.data.map(toView) };
}

export async function updateKey(ctx: CallContext, id: string, patch: { name?: string; role_ids?: string[]; capabilities?: KeySpec['capabilities'] }) {
  const { tx } = ctx;
  const row = await findKey(ctx, id);
  const roleIds = patch.role_ids ? [...new Set(patch.role_ids)] : (JSON.parse(row.role_ids) as string[]);
  checkRoles(roleIds);
  const caps = patch.capabilities ? normaliseCapabilities(patch.capabilities) : (JSON.parse(row.capabilities) as Capability[]);
  if (patch.role_ids || patch.capabilities) {
    if (roleIds.length === 0 && caps.length === 0) throw badRequest('A key needs at least one role or capability');
    assertGrantable(ctx.grants, roleIds, caps);
  }
  const updated = { name: patch.name ?? row.name, role_ids: JSON.stringify(roleIds), capabilities: JSON.stringify(caps), updated_at: new Date().toISOString() };
  await ctx.app.keys.changing(tx);
  await updateKeyColumns(tx, id, updated);
  return toView({ ...row, ...updated });
}

/** A key may only manage keys whose permissions it holds itself (no lock-out of stronger keys). */
function assertManageable(row: ApiKeysTable, caller: Grants | null) {
  assertGrantable(caller, JSON.parse(row.role_ids) as string[], JSON.parse(row.capabilities) as Capability[]);
}

export async function toggleKey(ctx: CallContext, id: string) {
  const { tx } = ctx;
  const row = await findKey(ctx, id);
  assertManageable(row, ctx.grants);
  if (row.id === ctx.actor && row.is_enabled) throw badRequest('A key cannot disable itself; use another key');
  const is_enabled = row.is_enabled ? 0 : 1;
  await ctx.app.keys.changing(tx);
  await updateKeyColumns(tx, id, { is_enabled, updated_at: new Date().toISOString() });
  return { message: is_enabled ? 'API key enabled' : 'API key disabled', is_enabled: !!is_enabled };
}

export async function rotateKey(ctx: CallContext, id: string, graceHours: number) {
  const { tx, app } = ctx;
  const row = await findKey(ctx, id);
  // The caller receives the key's new token, so it must hold everything the key grants.
  assertGrantable(ctx.grants, JSON.parse(row.role_ids) as string[], JSON.parse(row.capabilities) as Capability[]);
  const token = generateToken(app.config.brandPrefix);
  const now = new Date();
  const graceUntil = graceHours > 0 ? new Date(now.getTime() + graceHours * 3600_000).toISOString() : null;
  await app.keys.changing(tx);
  await updateKeyColumns(tx, id, {
    token_hash: hashToken(token),
    masked_token: maskToken(token),
    old_token_hash: graceUntil ? row.token_hash : null,
    old_token_expired_at: graceUntil,
    updated_at: now.toISOString(),
  });
  return { token, name: row.name };
}

export async function deleteKey(ctx: CallContext, id: string) {
  const { tx } = ctx;
  assertManageable(await findKey(ctx, id), ctx.grants);
  if (id === ctx.actor) throw badRequest('A key cannot delete itself; use another key');
  const now = new Date().toISOString();
  await ctx.app.keys.changing(tx);
  await markKeyDeleted(tx, id, now);
  return { message: 'API key deleted' };
}

/** The calling key with its effective permissions (roles and capabilities flattened). */
export function effective(row: ApiKeysTable, grants: Grants) {
  const v = toView(row);
  const capabilities: { permission: string; id_resource: string | null }[] = [...grants.entries()].flatMap(([permission, g]) =>
    g.all ? [{ permission, id_resource: null as string | null }] : [...g.ids].map((id) => ({ permission, id_resource: id as string | null })),
  );
  return { ...v, capabilities };
}
