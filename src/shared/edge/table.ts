// What the edge serves, as data: one entry per hostname, built by Slipway (the control plane) from
// the hostname registry and each kind's services, and handed whole to a proxy (the data plane),
// which needs no database and no Slipway to answer. A proxy driver turns it into its own
// configuration (nginx/config.ts).

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
      /** `/about` serves `about.html` or `about/index.html`. */
      prettyUrls: boolean;
      /** The site's page for 404, a path under root (e.g. `/404.html`), or null for the edge's own. */
      notFoundPage: string | null;
      /** Every path not found serves this file with 200 (single-page applications), or null. */
      fallback: string | null;
    }
  /**
   * Slipway answers (its in-process origin at the proxy's `origin` address): what the proxy
   * cannot decide on its own, e.g. waking a hibernated application on its first request.
   */
  | { type: 'origin' };

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
