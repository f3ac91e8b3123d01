// The bucket's public CDN hostname, held through the shared domains module, so that no two
// services of the installation can hold the same hostname (applications', static sites' and load
// balancers' domains live in the same registry).
import type { CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { claimantOf, claimedHostnameOf, claimedHostnamesOf, claimHostname as claim, releaseHostname as release } from '../domains/index.js';

/** Claims `hostname` for bucket `bucketId`; 400 when another service holds it. */
export async function claimHostname(ctx: CallContext, bucketId: string, hostname: string): Promise<void> {
  await claim(ctx, hostname, { type: 'object-storage', id: bucketId });
}

/** Gives up the bucket's hostname; whether it held one. */
export async function releaseHostname(ctx: CallContext, bucketId: string): Promise<boolean> {
  const hostname = await claimedHostnameOf(ctx.tx, bucketId);
  if (!hostname) return false;
  await release(ctx, hostname, bucketId);
  return true;
}

/** The hostname a bucket holds, if any. */
export const hostnameOf = (tx: Tx, bucketId: string) => claimedHostnameOf(tx, bucketId);

/** The hostnames of a page of buckets, by bucket id. */
export const hostnamesOf = (tx: Tx, bucketIds: readonly string[]) => claimedHostnamesOf(tx, bucketIds);

/** The bucket a hostname is claimed for. */
export const bucketOfHostname = (tx: Tx, hostname: string) => claimantOf(tx, hostname);
