// Device authorization for CLIs: a client asks for a short code, a person approves it (here:
// the operator, through /_admin or `slipway admin`), and the client's next poll receives a new
// API key token exactly once. Codes expire after five minutes; an IP may hold five active codes.
import { randomInt } from 'node:crypto';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { refuseIfTaken } from '../../shared/naming.js';
import { ApiError, badRequest, notFound } from '../../shared/errors.js';
import { createKeyWithRole, findCompany } from '../accounts/index.js';
import { clearToken, countActiveCodes, decideIfPending, deleteCodesExpiredBefore, findCode, insertCode } from './storage.js';

export const CODE_TTL_MS = 5 * 60_000;
export const MAX_ACTIVE_PER_IP = 5;
const ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ23456789';

function newCode(): string {
  const pick = () => Array.from({ length: 4 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
  return `${pick()}-${pick()}`;
}

export async function createCode(app: AppContext, tx: Tx, ip: string) {
  // Count and insert as one step per address, or concurrent requests overshoot the limit.
  const now = new Date();
  await refuseIfTaken(
    tx,
    `device-codes:${ip}`,
    async () => (await countActiveCodes(tx, ip, now.toISOString())) >= MAX_ACTIVE_PER_IP,
    () =>
      new ApiError(429, `At most ${MAX_ACTIVE_PER_IP} device codes may be pending per client address; wait for one to expire.`, undefined, {
        'retry-after': '60',
      }),
  );
  await deleteCodesExpiredBefore(tx, new Date(now.getTime() - 86400_000).toISOString());
  const code = newCode();
  const expires_at = new Date(now.getTime() + CODE_TTL_MS).toISOString();
  await insertCode(tx, {
    code,
    client_ip: ip,
    status: 'pending',
    expires_at,
    company_id: null,
    api_key_id: null,
    token_enc: null,
    created_at: now.toISOString(),
  });
  return { code, expires_at };
}

export async function pollCode(app: AppContext, tx: Tx, code: string) {
  const row = await findCode(tx, code.toUpperCase());
  if (!row) return { status: 'expired' as const };
  if (row.status === 'denied') return { status: 'denied' as const };
  if (row.status === 'approved') {
    if (!row.token_enc) return { status: 'approved' as const };
    // Compare-and-clear: of concurrent polls exactly one receives the token.
    if (!(await clearToken(tx, row.code, row.token_enc))) return { status: 'approved' as const };
    return { status: 'approved' as const, token: app.secrets.decrypt(row.token_enc) };
  }
  if (row.expires_at <= new Date().toISOString()) return { status: 'expired' as const };
  return { status: 'pending' as const };
}

/** Operator decision on a pending code. Approval creates a CLI key in the chosen company. */
export async function decide(app: AppContext, tx: Tx, code: string, decision: { approve: boolean; companyId?: string; role?: string; name?: string }) {
  const row = await findCode(tx, code.toUpperCase());
  if (!row) throw notFound('Device code');
  if (row.status !== 'pending' || row.expires_at <= new Date().toISOString())
    throw badRequest(`Device code is ${row.status === 'pending' ? 'expired' : row.status}`);
  // Decisions update the row only while it is still pending: of concurrent decisions one wins and
  // the others fail (rolling back the key an approval created).
  const decided = (won: boolean) => {
    if (!won) throw badRequest('Device code was decided by another request');
  };
  if (!decision.approve) {
    decided(await decideIfPending(tx, row.code, { status: 'denied' }));
    return { code: row.code, status: 'denied' };
  }
  if (!decision.companyId) throw badRequest('company_id is required to approve a device code');
  const company = await findCompany(tx, decision.companyId);
  const key = await createKeyWithRole(app, tx, company.id, {
    name: decision.name ?? `CLI device ${row.code}`,
    role: decision.role ?? 'Company Admin',
    source: 'CLI',
  });
  decided(await decideIfPending(tx, row.code, { status: 'approved', company_id: company.id, api_key_id: key.id, token_enc: app.secrets.encrypt(key.token) }));
  return { code: row.code, status: 'approved', api_key_id: key.id };
}
