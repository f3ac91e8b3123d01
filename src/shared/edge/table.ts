// What the edge serves, as data: one entry per hostname, built by Slipway (the control plane) from
// the hostname registry and each kind's services, and handed whole to a proxy (the data plane),
// which needs no database and no Slipway to answer. A proxy driver turns it into its own
// configuration (nginx/config.ts).
import { createHash } from 'node:crypto';
import { lookup as dnsLookup } from 'node:dns';
import type { RoutedHost } from './index.js';
import { maintenancePage } from './pages.js';

/** The service a hostname belongs to (access logs and metrics are kept per owner). */
export interface TableOwner {
  kind: string;
  id: string;
  companyId: string;
}

/** One upstream server: `address` is host:port. */
export interface UpstreamServer {
  address: string;
  weight: number;
}

/**
 * An HTTP(S) server outside the table, reached at `address` (host:port, resolved by the control
 * plane) with `host` as the request's Host; the request's path follows `path`.
 */
export interface UrlTarget {
  address: string;
  tls: boolean;
  host: string;
  path: string;
}

type Lookup = (host: string, options: object, cb: (err: Error | null, address: string) => void) => void;

/** A URL's server as a proxy reaches it: `address:port` (an IPv6 address in brackets), its host name resolved by `lookup` now. */
export async function serverAddress(url: URL, lookup: Lookup = dnsLookup as Lookup): Promise<string> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const address = await new Promise<string>((ok, fail) => lookup(host, {}, (err, a) => (err ? fail(err) : ok(a))));
  return `${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/** Where a hostname's requests go. */
export type EdgeTarget =
  /** A running application's instances, balanced (least connections when they differ in weight: round robin). */
  | { type: 'upstream'; servers: UpstreamServer[] }
  /** A static site's release on disk. */
  | {
      type: 'static';
      /** The directory whose files are served (absolute): a release's `public/` directory. */
      root: string;
      /**
       * The same files with their precompressed copies beside them (`app.js.gz`, `app.js.br`), or
       * null: the proxy serves from here, answering a copy to a client that accepts its encoding;
       * a copy's own name is not a URL of the site (only `root`'s files are).
       */
      compressedRoot: string | null;
      /** `/about` serves `about.html` or `about/index.html`. */
      prettyUrls: boolean;
      /**
       * The file a directory's path (`/docs/`) serves, a name without `/` (default `index.html`):
       * with pretty URLs `/docs/<indexFile>` redirects to `/docs/` when the name ends in `.html`.
       */
      indexFile?: string;
      /** The site's page for 404, a path under root (e.g. `/404.html`), or null for the edge's own. */
      notFoundPage: string | null;
      /** Every path not found serves this file with 200 (single-page applications), or null. */
      fallback: string | null;
    }
  /** A load balancer: each request goes to one of its destinations (see BalanceDestination). */
  | {
      type: 'balance';
      destinations: BalanceDestination[];
      /** GEO mode: the destination nearest each country (an index into `destinations`); others by weight. */
      nearest: Record<string, number> | null;
    }
  /**
   * Another HTTP server that answers this hostname itself: a bucket's CDN hostname, which the API
   * server's S3 data plane serves (the proxy keeps the Host, so the data plane routes it).
   */
  | { type: 'url'; url: UrlTarget }
  /**
   * Slipway answers (its in-process origin at the proxy's `origin` address): what the proxy
   * cannot decide on its own, e.g. waking a hibernated application on its first request.
   */
  | { type: 'origin' };

/**
 * One destination of a load balancer. Weight 0 gets no share of the weighted choice (GEO may still
 * pick it as the nearest).
 */
export type BalanceDestination =
  /** A service of the table, served as its own hostnames serve it (IP restriction, maintenance, cache). */
  | { weight: number; service: { kind: string; id: string } }
  /**
   * An HTTP(S) server outside the table (an external URL, a bucket's CDN hostname on the API
   * server): `address` is host:port, resolved by the control plane; the request's path follows `path`.
   */
  | {
      weight: number;
      url: UrlTarget;
      /** Whom the request is logged for besides the load balancer (null: the load balancer only). */
      owner: TableOwner | null;
    };

export interface EdgeHost {
  /**
   * Lower case, no trailing dot; or a wildcard `*.<base>`, which names every hostname of exactly one
   * more label under `<base>` (`a.example.com`, not `a.b.example.com` nor `example.com`) that no
   * entry of the table names exactly and `unknown` does not hold (the registry's routeOf).
   */
  hostname: string;
  owner: TableOwner;
  target: EdgeTarget;
  /** IP restriction on the client address (the proxy believes X-Forwarded-For only from trusted proxies). */
  ipRestriction: { type: 'allow' | 'deny'; ips: string[] } | null;
  /** Maintenance: 503 with Retry-After and this page (HTML), instead of the target. */
  maintenance: { html: string } | null;
  /**
   * Responses kept by the proxy's cache: `generation` is part of the key, a purge is a new
   * generation; `seconds` 0 keeps what the response's Cache-Control allows, for as long as it says.
   * `bypassOrigin`: requests with an Origin header go past it (their CORS headers depend on it).
   */
  cache: { seconds: number; generation: number; bypassOrigin?: boolean } | null;
  /** The certificate and key files (PEM) for HTTPS on this hostname, or null (HTTP only). */
  tls: { certFile: string; keyFile: string } | null;
  /** With `tls`: plain HTTP requests are redirected to HTTPS (301) instead of served. */
  httpsRedirect: boolean;
}

export interface EdgeTable {
  hosts: EdgeHost[];
  /**
   * Names the registry answers as unknown (404) though a wildcard of `hosts` covers them, so that a
   * proxy matching the wildcard does not give them to the wildcard's owner: `hostnames` it records
   * without serving them (a custom domain not yet verified, a disabled one), and
   * the preview names `<label>--<hostname>` of each hostname in `previewsOf` (a static site's) whose
   * label is not one of the site's (those are entries of `hosts`).
   */
  unknown?: { hostnames: string[]; previewsOf: string[] };
}

/**
 * Whether a proxy serves a static site with this index file: one file name (no `/`) of these
 * characters, which the proxy's configuration can hold; a site with another is left to the origin.
 */
export const servableIndexFile = (name: string) => /^[A-Za-z0-9_~@+-][A-Za-z0-9._~@+-]{0,127}$/.test(name);

/** Whether a hostname of the table is a wildcard (`*.example.com`). */
export const isWildcard = (hostname: string) => hostname.startsWith('*.');

/** The parent of a hostname (`example.com` of `a.example.com`; of `feat--a.example.com` too), or null for a single label. */
export function parentOf(hostname: string): string | null {
  const dot = hostname.indexOf('.');
  return dot > 0 ? hostname.slice(dot + 1) : null;
}

/** What a kind's edge service says of one service (EdgeService.describe): a host without its name and owner. */
export type EdgeDescription = Pick<EdgeHost, 'target' | 'ipRestriction' | 'maintenance' | 'cache'>;

/** A service's IP restriction and maintenance settings (as the in-process edge applies them) in the table's terms. */
export function checksOf(
  ipr: { type: 'allow' | 'deny'; is_enabled: boolean; ip_list: string[] } | null | undefined,
  maintenance: { is_enabled: boolean; page_url: string | null } | null | undefined,
): Pick<EdgeHost, 'ipRestriction' | 'maintenance'> {
  return {
    ipRestriction: ipr?.is_enabled ? { type: ipr.type, ips: ipr.ip_list } : null,
    maintenance: maintenance?.is_enabled ? { html: maintenancePage(maintenance.page_url) } : null,
  };
}

/** A cache generation from a service's cache version (its settings' last change and last purge): a purge changes it. */
export function cacheGeneration(version: string): number {
  return parseInt(createHash('sha256').update(version).digest('hex').slice(0, 12), 16);
}

const ORIGIN: EdgeDescription = { target: { type: 'origin' }, ipRestriction: null, maintenance: null, cache: null };

/**
 * The table of every routed hostname: each service described once by its kind (`describe`; null,
 * or a failure, leaves it to the origin). `accept` drops hostnames the proxy cannot name, which
 * then reach the origin through the proxy's default server. `held` are the hostnames the registry
 * records without serving them: a preview name among them is not the site's (the registry's own row
 * of a name decides it), and those a wildcard of the table covers go to `unknown`.
 *
 * Entries come in the registry's order of precedence for a hostname: names the registry serves as
 * such, then preview names, then wildcards (a proxy's exact names win over its patterns anyway; a
 * service's first entry is the one a load balancer reaches it through).
 */
export async function buildTable(
  routed: RoutedHost[],
  describe: (r: RoutedHost) => Promise<EdgeDescription | null>,
  accept: (hostname: string) => boolean,
  onError: (r: RoutedHost, e: Error) => void,
  held: string[] = [],
): Promise<EdgeTable> {
  const described = new Map<string, Promise<EdgeDescription>>();
  const seen = new Set<string>(held);
  const rank = (r: RoutedHost) => (isWildcard(r.hostname) ? 2 : r.preview !== undefined ? 1 : 0);
  const ordered = routed.map((r, i) => ({ r, i })).sort((a, b) => rank(a.r) - rank(b.r) || a.i - b.i);
  const hosts: EdgeHost[] = [];
  const previews = new Set<string>();
  for (const { r } of ordered) {
    if (seen.has(r.hostname) || !accept(r.hostname)) continue;
    seen.add(r.hostname);
    if (r.preview !== undefined) previews.add(r.hostname);
    const key = `${r.kind}:${r.id}:${r.preview ?? ''}`;
    let d = described.get(key);
    if (!d) {
      d = describe(r).then(
        (x) => x ?? ORIGIN,
        (e: Error) => (onError(r, e), ORIGIN),
      );
      described.set(key, d);
    }
    const desc = await d;
    hosts.push({ hostname: r.hostname, owner: { kind: r.kind, id: r.id, companyId: r.companyId }, ...desc, tls: null, httpsRedirect: false });
  }
  const wildcards = new Set(hosts.filter((h) => isWildcard(h.hostname)).map((h) => h.hostname.slice(2)));
  if (!wildcards.size) return { hosts };
  const covered = (name: string) => {
    const parent = parentOf(name);
    return parent !== null && wildcards.has(parent);
  };
  const unknown = {
    hostnames: [...new Set(held)].filter((h) => !isWildcard(h) && covered(h) && accept(h)).sort(),
    // The registry's preview rule: `<label>--<hostname>` of a static site's own served hostname.
    previewsOf: hosts
      .filter((h) => h.owner.kind === 'static-site' && !isWildcard(h.hostname) && !previews.has(h.hostname) && covered(h.hostname))
      .map((h) => h.hostname),
  };
  return { hosts, unknown };
}
