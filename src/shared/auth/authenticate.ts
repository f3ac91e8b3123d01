// Bearer-key authentication: every failure is a 401 with a message saying which case it was.
import type { Db } from '../db/index.js';
import { contentVersion, contentVersionOfTurn } from '../db/content-version.js';
import type { ApiKeysTable, CompaniesTable } from '../db/schema.js';
import { forbidden, unauthorized } from '../errors.js';
import { computeGrants, type Capability, type Grants } from './rbac.js';
import type { KeyCache, KeyRows } from './keycache.js';
import { hashesEqual, hashToken } from './tokens.js';

export interface AuthContext {
  company: CompaniesTable;
  key: ApiKeysTable;
  grants: Grants;
  /** SQLite: the database's content version when the key was checked (see CallContext.asOf). */
  asOf?: string;
}

// The scheme name is case-insensitive (RFC 9110, section 11.1).
const BEARER = /^Bearer ([\x21-\x7e]{16,512})$/i;

/**
 * The key presented in `header`, its company and grants. The rows come from `keys` (memory) when
 * nothing changed since they were read; every check against the clock runs on each request.
 * `shared`: the content version is the one of the turn (contentVersionOfTurn), read once for the
 * requests that arrived in it (GET and HEAD: the caches it keys serve reads), not by this request alone.
 */
export async function authenticate(db: Db, keys: KeyCache, header: string | undefined, shared = false, now = new Date()): Promise<AuthContext> {
  if (header === undefined || header === '') throw unauthorized('Missing Authorization header: send "Authorization: Bearer <API key>"');
  const m = BEARER.exec(header.trim());
  if (!m) throw unauthorized('Malformed Authorization header: expected "Bearer <API key>"');
  const hash = hashToken(m[1]!);
  const nowIso = now.toISOString();
  const ofTurn = shared ? contentVersionOfTurn(db) : undefined;
  const asOf = ofTurn ? await ofTurn : contentVersion(db);
  // Only keys that pass are kept: a refused key is read again next time (it may be enabled meanwhile).
  const rows = await keys.get(
    hash,
    () => loadKey(db, hash),
    (r) => refusal(r, nowIso) === undefined,
    now.getTime(),
    asOf,
  );
  const why = refusal(rows, nowIso);
  if (why) throw unauthorized(why);
  const { key, company } = rows!;
  // last_used_at is kept to the minute: one write per key and minute, not one per request.
  if (!key.last_used_at || now.getTime() - Date.parse(key.last_used_at) > 60_000) {
    key.last_used_at = nowIso;
    await db.updateTable('api_keys').set({ last_used_at: nowIso }).where('id', '=', key.id).execute();
  }
  rows!.grants ??= computeGrants(JSON.parse(key.role_ids) as string[], JSON.parse(key.capabilities) as Capability[]);
  return { company: company!, key: { ...key }, grants: rows!.grants, asOf };
}

/** Why the key is refused now, or undefined when it may be used. */
function refusal(rows: KeyRows | undefined, nowIso: string): string | undefined {
  if (!rows) return 'Invalid API key';
  const { key, company, viaOld } = rows;
  if (key.deleted_at) return 'This API key has been deleted';
  if (viaOld && (!key.old_token_expired_at || key.old_token_expired_at <= nowIso)) return 'This API key token has been rotated and is no longer valid';
  if (!key.is_enabled) return 'This API key is disabled';
  if (key.expired_at && key.expired_at <= nowIso) return 'This API key has expired';
  if (!company) return 'Invalid API key';
  return undefined;
}

async function loadKey(db: Db, hash: string): Promise<KeyRows | undefined> {
  let key = await db.selectFrom('api_keys').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  let viaOld = false;
  if (!key) {
    key = await db.selectFrom('api_keys').selectAll().where('old_token_hash', '=', hash).executeTakeFirst();
    viaOld = !!key;
  }
  const stored = viaOld ? key?.old_token_hash : key?.token_hash;
  if (!key || !stored || !hashesEqual(stored, hash)) return undefined;
  const company = await db.selectFrom('companies').selectAll().where('id', '=', key.company_id).executeTakeFirst();
  return { key, company, viaOld };
}

/** The company states that block work: suspended blocks everything, maintenance blocks changes. */
export function assertCompanyAllows(company: Pick<CompaniesTable, 'status'> | undefined, write: boolean): void {
  if (company?.status === 'suspended') throw forbidden('This company is suspended; contact support to restore access.');
  if (company?.status === 'maintenance' && write)
    throw forbidden('This company is being migrated or maintained: changes are blocked until it completes; reads still work.');
}

/** A company by id (work that arrives without a key, e.g. deployment hooks). */
export async function companyById(db: Db, id: string): Promise<CompaniesTable | undefined> {
  return db.selectFrom('companies').selectAll().where('id', '=', id).executeTakeFirst();
}
