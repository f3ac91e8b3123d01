// Bearer-key authentication: every failure is a 401 with a message saying which case it was.
import type { Db } from '../db/index.js';
import type { ApiKeysTable, CompaniesTable } from '../db/schema.js';
import { forbidden, unauthorized } from '../errors.js';
import { computeGrants, type Capability, type Grants } from './rbac.js';
import { hashesEqual, hashToken } from './tokens.js';

export interface AuthContext {
  company: CompaniesTable;
  key: ApiKeysTable;
  grants: Grants;
}

// The scheme name is case-insensitive (RFC 9110, section 11.1).
const BEARER = /^Bearer ([\x21-\x7e]{16,512})$/i;

export async function authenticate(db: Db, header: string | undefined, now = new Date()): Promise<AuthContext> {
  if (header === undefined || header === '') throw unauthorized('Missing Authorization header: send "Authorization: Bearer <API key>"');
  const m = BEARER.exec(header.trim());
  if (!m) throw unauthorized('Malformed Authorization header: expected "Bearer <API key>"');
  const hash = hashToken(m[1]!);
  let key = await db.selectFrom('api_keys').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  let viaOld = false;
  if (!key) {
    key = await db.selectFrom('api_keys').selectAll().where('old_token_hash', '=', hash).executeTakeFirst();
    viaOld = !!key;
  }
  const stored = viaOld ? key?.old_token_hash : key?.token_hash;
  if (!key || !stored || !hashesEqual(stored, hash)) throw unauthorized('Invalid API key');
  const nowIso = now.toISOString();
  if (key.deleted_at) throw unauthorized('This API key has been deleted');
  if (viaOld && (!key.old_token_expired_at || key.old_token_expired_at <= nowIso))
    throw unauthorized('This API key token has been rotated and is no longer valid');
  if (!key.is_enabled) throw unauthorized('This API key is disabled');
  if (key.expired_at && key.expired_at <= nowIso) throw unauthorized('This API key has expired');
  const company = await db.selectFrom('companies').selectAll().where('id', '=', key.company_id).executeTakeFirst();
  if (!company) throw unauthorized('Invalid API key');
  if (!key.last_used_at || now.getTime() - Date.parse(key.last_used_at) > 60_000) {
    await db.updateTable('api_keys').set({ last_used_at: nowIso }).where('id', '=', key.id).execute();
    key.last_used_at = nowIso;
  }
  const grants = computeGrants(JSON.parse(key.role_ids) as string[], JSON.parse(key.capabilities) as Capability[]);
  return { company, key, grants };
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
