// What the edge serves, as data: one entry per hostname, built by Slipway (the control plane) from
// the hostname registry and each kind's services, and handed whole to a proxy (the data plane),
// which needs no database and no Slipway to answer. A proxy driver turns it into its own
// configuration (nginx/config.ts).
import { createHash } from 'node:crypto';
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
      url: { address: string; tls: boolean; host: string; path: string };
      /** Whom the request is logged for besides the load balancer (null: the load balancer only). */
      owner: TableOwner | null;
    };

export interface EdgeHost {
  /** Lower case, no trailing dot. */
  hostname: string;
  owner: TableOwner;
  target: EdgeTarget;
  /** IP restriction on the client address (the proxy believes X-Forwarded-For only from trusted proxies). */
  ipRestriction: { type: 'allow' | 'deny'; ips: string[] } | null;
  /** Maintenance: 503 with Retry-After and this page (HTML), instead of the target. */
  maintenance: { html: string } | null;
  /** Responses kept by the proxy's cache: `generation` is part of the key, a purge is a new generation. */
  cache: { seconds: number; generation: number } | null;
  /** The certificate and key files (PEM) for HTTPS on this hostname, or null (HTTP only). */
  tls: { certFile: string; keyFile: string } | null;
  /** With `tls`: plain HTTP requests are redirected to HTTPS (301) instead of served. */
  httpsRedirect: boolean;
}

export interface EdgeTable {
  hosts: EdgeHost[];
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
 * or a failure, leaves it to the origin). `accept` drops hostnames the proxy cannot name (wildcards),
 * which then reach the origin through the proxy's default server.
 */
export async function buildTable(
  routed: RoutedHost[],
  describe: (r: RoutedHost) => Promise<EdgeDescription | null>,
  accept: (hostname: string) => boolean,
  onError: (r: RoutedHost, e: Error) => void,
): Promise<EdgeTable> {
  const described = new Map<string, Promise<EdgeDescription>>();
  const seen = new Set<string>();
  const hosts: EdgeHost[] = [];
  for (const r of routed) {
    if (seen.has(r.hostname) || !accept(r.hostname)) continue;
    seen.add(r.hostname);
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
  return { hosts };
}
