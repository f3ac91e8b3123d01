// Buckets on the edge (SLIPWAY_RUNTIME=local): a bucket's public objects are read through its CDN
// hostname, which this server's data plane serves (s3.ts), so the edge forwards the request to the
// API server with that Host. As load balancer destinations: the in-process edge forwards it here,
// nginx from the load balancer's description (with `bucketUpstream`). A bucket without a CDN domain has
// no public objects: the load balancer sees it as unable to answer (403 when asked directly).
//
// The CDN hostname itself: the registry records it for the bucket without routing it (the
// in-process edge answers 404 for it; the API server's own port serves it). A proxy in front
// (nginx) serves it all the same (`claimed`, `describe`): passed to the API server with its Host,
// through the proxy's cache, keyed by the bucket's `updated_at` (what purge-cache writes).
import type { AppContext } from '../../shared/context.js';
import type { EdgeOwner, EdgeSite, RoutedHost } from '../../shared/edge/index.js';
import { page, sendPage } from '../../shared/edge/pages.js';
import { proxy } from '../../shared/edge/proxy.js';
import { cacheGeneration, serverAddress, type EdgeDescription, type UrlTarget } from '../../shared/edge/table.js';
import { hostnameOf, hostnamesOf } from './domains.js';
import { runtime } from './runtime.js';
import { findBucketOwner, findBucketRow, listBucketOwners } from './storage.js';

/** A bucket's owner on the edge and its CDN hostname (null: no public objects); null when there is no such bucket. */
async function bucketCdn(app: AppContext, id: string): Promise<{ owner: EdgeOwner; host: string | null } | null> {
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

/**
 * A bucket's CDN hostname as a proxy reaches it: the API server's data plane with that Host (url
 * null: no CDN hostname, no public objects); null when there is no such bucket.
 */
export async function bucketUpstream(app: AppContext, id: string): Promise<{ owner: EdgeOwner; url: UrlTarget | null } | null> {
  const b = await bucketCdn(app, id);
  if (!b) return null;
  return { owner: b.owner, url: b.host ? await dataPlane(app, b.host) : null };
}

/** The API server's data plane as a proxy reaches it, with `host` (a CDN hostname) as Host. */
async function dataPlane(app: AppContext, host: string): Promise<UrlTarget> {
  const api = new URL(app.baseUrl);
  return { address: await serverAddress(api), tls: api.protocol === 'https:', host, path: '' };
}

/** The CDN hostnames among the registry's held names, with their buckets (two queries, however many). */
async function cdnHosts(app: AppContext, held: string[]): Promise<RoutedHost[]> {
  const db = app.database.db;
  const suffix = `.${runtime(app).settings.cdnDomain}`;
  const wanted = new Set(held.filter((h) => h.endsWith(suffix)));
  if (!wanted.size) return [];
  const buckets = await listBucketOwners(db);
  const names = await hostnamesOf(
    db,
    buckets.map((b) => b.id),
  );
  return buckets.flatMap((b) => {
    const hostname = names.get(b.id);
    return hostname && wanted.has(hostname) ? [{ hostname, kind: 'object-storage', id: b.id, companyId: b.company_id }] : [];
  });
}

/** A bucket's CDN hostname for a proxy in front: the API server's data plane, through the proxy's cache. */
async function describeBucket(app: AppContext, id: string): Promise<EdgeDescription | null> {
  const db = app.database.db;
  const [b, host] = await Promise.all([findBucketRow(db, id), hostnameOf(db, id)]);
  if (!b || !host) return null;
  return {
    target: { type: 'url', url: await dataPlane(app, host) },
    ipRestriction: null,
    maintenance: null,
    // The data plane's in-process cache rules: what Cache-Control allows, a purge is a new `updated_at`, no Origin.
    cache: { seconds: 0, generation: cacheGeneration(b.updated_at), bypassOrigin: true },
  };
}

/** Registers buckets with the edge: by id (load balancer destinations), and their CDN hostnames for a proxy in front. */
export function registerEdge(app: AppContext): void {
  app.runtimes.edge?.register({
    kind: 'object-storage',
    byId: (id) => bucketSite(app, id),
    describe: (id) => describeBucket(app, id),
    claimed: (held) => cdnHosts(app, held),
  });
}
