// Buckets as load balancer destinations on the edge (SLIPWAY_RUNTIME=local): a bucket's public
// objects are read through its CDN hostname, which this server's data plane serves (s3.ts), so the
// edge forwards the request to the API server with that Host (nginx does the same from the load
// balancer's description, with `bucketCdn`). A bucket without a CDN domain has no public objects:
// the load balancer sees it as unable to answer (403 when asked directly).
import type { AppContext } from '../../shared/context.js';
import type { EdgeOwner, EdgeSite } from '../../shared/edge/index.js';
import { page, sendPage } from '../../shared/edge/pages.js';
import { proxy } from '../../shared/edge/proxy.js';
import { hostnameOf } from './domains.js';
import { findBucketOwner } from './storage.js';

/** A bucket's owner on the edge and its CDN hostname (null: no public objects); null when there is no such bucket. */
export async function bucketCdn(app: AppContext, id: string): Promise<{ owner: EdgeOwner; host: string | null } | null> {
  const db = app.database.db;
  const b = await findBucketOwner(db, id);
  if (!b) return null;
  return { owner: { kind: 'object-storage', id: b.id, companyId: b.company_id }, host: await hostnameOf(db, b.id) };
}

async function bucketSite(app: AppContext, id: string): Promise<EdgeSite | null> {
  const b = await bucketCdn(app, id);
  if (!b) return null;
  const { owner, host } = b;
  return {
    owner,
    serve: async (req, res, info) => {
      if (!host) return info.fallible ? 'refused' : sendPage(res, 403, page('Forbidden', 'This bucket has no public objects.'));
      const outcome = await proxy(req, res, { url: new URL(app.baseUrl), host });
      if (outcome === 'refused') return info.fallible ? 'refused' : sendPage(res, 502, page('Bad gateway', 'The object storage could not be reached.'));
    },
  };
}

/** Registers buckets with the edge, by id only (their own hostnames are the API server's). */
export function registerEdge(app: AppContext): void {
  app.runtimes.edge?.register({ kind: 'object-storage', byId: (id) => bucketSite(app, id) });
}
