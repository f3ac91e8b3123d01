// Safe retries: the first response to a write carrying `Idempotency-Key` is stored per company
// and key for 24 hours and replayed to retries. The row is inserted inside the same transaction
// as the write, so two concurrent requests with one key never both execute: the second waits on
// the first's row (PostgreSQL unique index; SQLite has a single writer) and then replays it.
import { createHash } from 'node:crypto';
import type { Db, Tx } from './db/index.js';
import { badRequest } from './errors.js';

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export interface StoredResponse {
  status: number;
  body: unknown;
}

export function fingerprint(method: string, url: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${url}\n`)
    .update(body === undefined ? '' : JSON.stringify(body))
    .digest('hex');
}

const mismatch = () => badRequest('This Idempotency-Key was already used with a different request (method, path or body). Use a new key for a new request.');

/** A completed earlier response for this key, or undefined when the request should run. */
export async function lookup(db: Tx, companyId: string, key: string, fp: string): Promise<StoredResponse | undefined> {
  const row = await db.selectFrom('idempotency_keys').selectAll().where('company_id', '=', companyId).where('key', '=', key).executeTakeFirst();
  if (!row) return undefined;
  if (Date.parse(row.created_at) < Date.now() - IDEMPOTENCY_TTL_MS) {
    await db.deleteFrom('idempotency_keys').where('company_id', '=', companyId).where('key', '=', key).execute();
    return undefined;
  }
  if (row.fingerprint !== fp) throw mismatch();
  if (row.status_code === null) return undefined;
  return { status: row.status_code, body: row.body === null ? undefined : JSON.parse(row.body) };
}

/** Claims the key inside the write's transaction; false when another request already holds it. */
export async function claim(tx: Tx, companyId: string, key: string, fp: string): Promise<boolean> {
  const inserted = await tx
    .insertInto('idempotency_keys')
    .values({ company_id: companyId, key, fingerprint: fp, status_code: null, body: null, created_at: new Date().toISOString() })
    .onConflict((oc) => oc.columns(['company_id', 'key']).doNothing())
    .returning('key')
    .executeTakeFirst();
  return !!inserted;
}

export async function complete(tx: Tx, companyId: string, key: string, res: StoredResponse): Promise<void> {
  await tx
    .updateTable('idempotency_keys')
    .set({ status_code: res.status, body: res.body === undefined ? null : JSON.stringify(res.body) })
    .where('company_id', '=', companyId)
    .where('key', '=', key)
    .execute();
}

/** Records a client-error response after the write's transaction rolled back. */
export async function recordFailure(db: Db, companyId: string, key: string, fp: string, res: StoredResponse): Promise<void> {
  await db
    .insertInto('idempotency_keys')
    .values({ company_id: companyId, key, fingerprint: fp, status_code: res.status, body: JSON.stringify(res.body), created_at: new Date().toISOString() })
    .onConflict((oc) => oc.columns(['company_id', 'key']).doNothing())
    .execute();
}

export async function sweep(db: Db): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', new Date(Date.now() - IDEMPOTENCY_TTL_MS).toISOString())
    .execute();
}
