// The bucket's public CDN hostname, claimed in one place so that no two services of the
// installation can hold the same hostname. Until the shared domains module offers its
// hostname-claim function, the claim is a row in this area's own table (unique hostname); swapping
// in the shared function means replacing the bodies of `claimHostname` and `releaseHostname`.
import type { Tx } from '../../shared/db/index.js';
import { badRequest } from '../../shared/errors.js';

/** Claims `hostname` for bucket `bucketId`; 400 when another service holds it. */
export async function claimHostname(tx: Tx, bucketId: string, hostname: string): Promise<void> {
  const inserted = await tx
    .insertInto('object_storage_domains')
    .values({ hostname, bucket_id: bucketId, created_at: new Date().toISOString() })
    .onConflict((oc) => oc.doNothing())
    .returning('hostname')
    .executeTakeFirst();
  if (!inserted) throw badRequest(`The hostname ${hostname} is already in use`);
}

export async function releaseHostname(tx: Tx, bucketId: string): Promise<boolean> {
  const r = await tx.deleteFrom('object_storage_domains').where('bucket_id', '=', bucketId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** The hostname a bucket holds, if any. */
export async function hostnameOf(tx: Tx, bucketId: string): Promise<string | null> {
  return (await tx.selectFrom('object_storage_domains').select('hostname').where('bucket_id', '=', bucketId).executeTakeFirst())?.hostname ?? null;
}

/** The bucket a hostname is claimed for. */
export async function bucketOfHostname(tx: Tx, hostname: string): Promise<string | null> {
  return (await tx.selectFrom('object_storage_domains').select('bucket_id').where('hostname', '=', hostname).executeTakeFirst())?.bucket_id ?? null;
}
