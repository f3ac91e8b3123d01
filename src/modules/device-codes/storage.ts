// Queries of the device codes area. The table, its type and migration are the foundation's
// (src/shared/db).
import type { Tx } from '../../shared/db/index.js';
import type { DeviceCodesTable } from '../../shared/db/schema.js';

/** How many codes of a client address are pending and not expired at `now`. */
export async function countActiveCodes(tx: Tx, ip: string, now: string): Promise<number> {
  const active = await tx
    .selectFrom('device_codes')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('client_ip', '=', ip)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(active?.n ?? 0);
}

/** Deletes the codes that expired before `before`. */
export async function deleteCodesExpiredBefore(tx: Tx, before: string) {
  await tx.deleteFrom('device_codes').where('expires_at', '<', before).execute();
}

export async function insertCode(tx: Tx, row: DeviceCodesTable) {
  await tx.insertInto('device_codes').values(row).execute();
}

export async function findCode(tx: Tx, code: string): Promise<DeviceCodesTable | undefined> {
  return tx.selectFrom('device_codes').selectAll().where('code', '=', code).executeTakeFirst();
}

/** Clears a code's token if it is still `tokenEnc` (compare-and-clear); returns whether this call cleared it. */
export async function clearToken(tx: Tx, code: string, tokenEnc: string): Promise<boolean> {
  const res = await tx.updateTable('device_codes').set({ token_enc: null }).where('code', '=', code).where('token_enc', '=', tokenEnc).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Sets a decision on a code while it is still pending; returns whether this call decided it. */
export async function decideIfPending(tx: Tx, code: string, set: Pick<DeviceCodesTable, 'status'> & Partial<DeviceCodesTable>): Promise<boolean> {
  const res = await tx.updateTable('device_codes').set(set).where('code', '=', code).where('status', '=', 'pending').executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
