// The HTTP edge (SLIPWAY_RUNTIME=local): one server on SLIPWAY_EDGE_PORT that routes each request by
// its Host header to a *site* — an application's instances, a static site's release, a load
// balancer's destinations. Which service a hostname names is decided by one router (the domains
// module's hostname registry, `routeBy`), never by a service kind searching its own names; the
// kind's edge service (registered in setup()) then makes the site of that service.
// The edge applies what every site shares (IP restriction 403, maintenance 503 with Retry-After, the
// 404 for unknown hosts, 502 when the site fails) and tells listeners about every request served
// (access logs and traffic metrics). What a site serves is the registering module's business.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { clientAddress, inList } from '../net.js';
import { edgeSettings, type EdgeSettings } from './settings.js';
import type { Config } from '../config.js';
import { badGateway, escapeHtml, maintenancePage, page, sendPage } from './pages.js';
import { clientGeo, type LatLon } from './geo.js';
import { TrafficRecorder } from './traffic.js';
import type { Database } from '../db/index.js';
import { EdgeCache } from './cache.js';
import type { EdgeDescription } from './table.js';
import { afterCommit } from '../db/after-commit.js';
import type { Tx } from '../db/index.js';

export const RETRY_AFTER_SECONDS = 60;

/**
 * Tells the edge that `tx` changes what it serves (a setting, a domain, a release): once `tx`
 * committed, the edge applies it, and the request or job that committed waits for that.
 */
export function servingChanged(app: { runtimes: { edge: Edge | null } }, tx: Tx): void {
  const edge = app.runtimes.edge;
  if (edge) afterCommit(tx, () => edge.changed());
}

/** The service a site belongs to (for access logs and metrics). */
export interface EdgeOwner {
  kind: string;
  id: string;
  companyId: string;
}

export interface EdgeRequest {
  /** The Host header, lower case, without port or trailing dot. */
  host: string;
  /** The client's address (X-Forwarded-For only from trusted proxies). */
  clientIp: string;
  /** Set by a site that answered from a cache. */
  cached?: boolean;
  /** Load balancers a request went through already (cycle guard). */
  via?: string[];
  /**
   * Set by a load balancer: a site that cannot answer at all (not running, every upstream refused
   * the connection) returns 'refused' without answering, so the balancer can try another destination.
   */
  fallible?: boolean;
  /** The client's country (ISO 3166 alpha-2) from the operator's trusted header, or null. */
  country: string | null;
  /** The client's location from the operator's trusted headers (coordinates, else the country's centroid), or null. */
  location: LatLon | null;
}

export interface EdgeSite {
  owner: EdgeOwner;
  ipRestriction?: { type: 'allow' | 'deny'; is_enabled: boolean; ip_list: string[] } | null;
  maintenance?: { is_enabled: boolean; page_url: string | null } | null;
  /** Answers the request (the edge turns a thrown error into 502); 'refused' only when `info.fallible`. */
  serve(req: IncomingMessage, res: ServerResponse, info: EdgeRequest): Promise<void | 'refused'>;
}

/** What a module registers: how its services (by id) become sites. */
export interface EdgeService {
  kind: string;
  /** The site of one service (a preview lane's, where the kind has them), or null when it serves nothing. */
  byId(id: string, preview?: string): Promise<EdgeSite | null>;
  /**
   * What a proxy in front (the nginx driver) may serve on its own for this service: absent, or
   * null, sends its hostnames to the in-process edge (the origin), which keeps every kind working.
   */
  describe?(id: string, preview?: string): Promise<EdgeDescription | null>;
  /**
   * The preview labels a service answers at `<label>--<hostname>` for each of its hostnames (a
   * static site's preview branches), so a proxy in front can name them; absent: none (the router
   * still routes such names to the origin).
   */
  previews?(id: string): Promise<string[]>;
  /**
   * The hostnames among `held` (recorded by the registry for a service of this kind, not routed by
   * it) that a proxy in front serves for this kind all the same, each with its service: a bucket's
   * CDN hostname, which the in-process edge leaves to the API server's port. Absent: none.
   */
  claimed?(held: string[]): Promise<RoutedHost[]>;
}

/** A hostname the router routes, with its owner (every one the proxy's configuration names). */
export interface RoutedHost extends EdgeRoute {
  hostname: string;
  companyId: string;
}

/** The service a hostname names (and, for a static site's preview name, the branch label). */
export interface EdgeRoute {
  kind: string;
  id: string;
  preview?: string;
}

/** One request the edge answered, for access logs and metrics. */
export interface Served {
  owner: EdgeOwner;
  method: string;
  path: string;
  status: number;
  bytes: number;
  durationMs: number;
  clientIp: string;
  host: string;
  userAgent: string;
  referer: string;
  cached: boolean;
  country: string | null;
  at: Date;
}

/**
 * The in-process edge: the `node` driver, and the base of every driver (`app.runtimes.edge`): the
 * nginx driver (nginx/driver.ts) runs it as its origin on the loopback interface.
 */
export class Edge {
  /** Which driver serves the public port. */
  readonly driver: 'node' | 'nginx' = 'node';
  readonly settings: EdgeSettings;
  /** The response cache sites may answer through (src/shared/edge/cache.ts). */
  readonly cache: EdgeCache;
  port = 0;
  private servers: Server[] = [];
  protected services: EdgeService[] = [];
  private router: (host: string) => Promise<EdgeRoute | null> = async () => null;
  /** Every routed hostname (the proxy's table is built from it). */
  protected routed: () => Promise<RoutedHost[]> = async () => [];
  /** The hostnames the router knows but does not serve (unknown even where a wildcard covers them). */
  protected held: () => Promise<string[]> = async () => [];
  private listeners: ((s: Served) => void)[] = [];
  /** Every answered request, stored in batches for access logs and traffic metrics. */
  readonly traffic: TrafficRecorder;

  constructor(
    config: Config,
    protected log: FastifyBaseLogger,
    database: Database,
  ) {
    this.settings = edgeSettings(config);
    this.traffic = new TrafficRecorder(database, log, this.settings.trafficRetentionDays);
    this.onServed((s) => this.traffic.record(s));
    this.cache = new EdgeCache(this.settings.cacheBytes);
  }

  /** Adds a kind of service the edge can serve (in setup()). */
  register(service: EdgeService): void {
    this.services.push(service);
  }

  /** Sets what decides which service a hostname names (in setup(); the one owner of every hostname). */
  routeBy(router: (host: string) => Promise<EdgeRoute | null>, all?: () => Promise<RoutedHost[]>, held?: () => Promise<string[]>): void {
    this.router = router;
    if (all) this.routed = all;
    if (held) this.held = held;
  }

  /**
   * What is served changed (a deployment switched, a setting, a domain): resolves once a proxy in
   * front serves the change. The in-process edge reads everything per request: nothing to do.
   */
  async changed(): Promise<void> {}

  /** Calls `fn` after every answered request (in setup()). */
  onServed(fn: (s: Served) => void): void {
    this.listeners.push(fn);
  }

  /** Tells the listeners about a request answered (here, or by a proxy in front). */
  protected served(served: Served): void {
    for (const l of this.listeners) {
      try {
        l(served);
      } catch (e) {
        this.log.warn({ err: (e as Error).message }, 'edge listener failed');
      }
    }
  }

  /** The site of a service of a kind, by id (load balancer destinations, routed hostnames). */
  async site(kind: string, id: string, preview?: string): Promise<EdgeSite | null> {
    const s = this.services.find((x) => x.kind === kind);
    return s ? s.byId(id, preview) : null;
  }

  private async resolve(host: string): Promise<EdgeSite | null> {
    const route = await this.router(host);
    return route ? this.site(route.kind, route.id, route.preview) : null;
  }

  /** Applies a site's IP restriction and maintenance mode, then lets it answer (a load balancer's destination is reported on its own too). */
  async dispatch(site: EdgeSite, req: IncomingMessage, res: ServerResponse, info: EdgeRequest): Promise<void | 'refused'> {
    if (!info.via?.length) return this.answer(site, req, res, info);
    const cancel = this.track(site, req, res, info);
    const outcome = await this.answer(site, req, res, info);
    if (outcome === 'refused') cancel();
    return outcome;
  }

  private async answer(site: EdgeSite, req: IncomingMessage, res: ServerResponse, info: EdgeRequest): Promise<void | 'refused'> {
    const ipr = site.ipRestriction;
    if (ipr?.is_enabled) {
      const listed = inList(info.clientIp, ipr.ip_list);
      if (ipr.type === 'allow' ? !listed : listed) return sendPage(res, 403, page('Forbidden', 'Your address may not reach this service.'));
    }
    if (site.maintenance?.is_enabled) {
      return sendPage(res, 503, maintenancePage(site.maintenance.page_url), { 'retry-after': String(RETRY_AFTER_SECONDS) });
    }
    return site.serve(req, res, info);
  }

  /**
   * Reports the request to the listeners once its response is done, as served by `site` (a load
   * balancer's destination is reported too, as well as the load balancer). Returns a function that
   * cancels the report (the site refused and another answers).
   */
  private track(site: EdgeSite, req: IncomingMessage, res: ServerResponse, info: EdgeRequest): () => void {
    if (!this.listeners.length) return () => {};
    const started = performance.now();
    let bytes = 0;
    let cancelled = false;
    const write = res.write.bind(res);
    const end = res.end.bind(res);
    const count = (chunk: unknown) => {
      if (typeof chunk === 'string') bytes += Buffer.byteLength(chunk);
      else if (chunk instanceof Uint8Array) bytes += chunk.byteLength;
    };
    res.write = ((chunk: unknown, ...rest: never[]) => (count(chunk), write(chunk as never, ...rest))) as typeof res.write;
    res.end = ((chunk?: unknown, ...rest: never[]) => (typeof chunk !== 'function' && count(chunk), end(chunk as never, ...rest))) as typeof res.end;
    res.once('close', () => {
      if (cancelled) return;
      const served: Served = {
        owner: site.owner,
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        status: res.headersSent ? res.statusCode : 499,
        bytes,
        durationMs: performance.now() - started,
        clientIp: info.clientIp,
        host: info.host,
        userAgent: String(req.headers['user-agent'] ?? ''),
        referer: String(req.headers.referer ?? ''),
        cached: !!info.cached,
        country: info.country,
        at: new Date(),
      };
      this.served(served);
    });
    return () => {
      cancelled = true;
      res.write = write;
      res.end = end;
    };
  }

  /** The client's address: the socket's, or from trusted proxies X-Forwarded-For's (`proxied`: see fromProxy). */
  protected clientIp(req: IncomingMessage, _proxied: boolean): string {
    return clientAddress(req, this.settings.trustedProxies);
  }

  /**
   * Whether the request comes from the proxy in front that this edge is the origin of (which then
   * names the client, and has logged it): never for the in-process edge serving the public port.
   */
  protected fromProxy(_req: IncomingMessage): boolean {
    return false;
  }

  /**
   * `logged`: this listener is the one a proxy in front sends the requests it logged to (only a
   * load balancer's destinations are reported); believed only of a request `fromProxy`.
   */
  private async handle(req: IncomingMessage, res: ServerResponse, logged: boolean) {
    const proxied = this.fromProxy(req);
    const host = String(req.headers.host ?? '')
      .toLowerCase()
      .replace(/:\d+$/, '')
      .replace(/\.$/, '');
    const { country, location } = clientGeo(req, this.settings);
    const info: EdgeRequest = { host, clientIp: this.clientIp(req, proxied), country, location };
    const site = host ? await this.resolve(host) : null;
    if (!site) return sendPage(res, 404, page('Not found', `Nothing is served at ${escapeHtml(host || 'this address')}.`));
    if (!(logged && proxied)) this.track(site, req, res, info);
    if ((await this.dispatch(site, req, res, info)) === 'refused') badGateway(res);
  }

  /** Starts an HTTP server of this edge on `host:port` (0: a free one); answers the port. */
  protected async listen(port: number, host: string, logged: boolean): Promise<number> {
    const server = createServer((req, res) => {
      void this.handle(req, res, logged).catch((e: Error) => {
        this.log.warn({ err: e.message }, 'edge request failed');
        badGateway(res);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    this.servers.push(server);
    return (server.address() as { port: number }).port;
  }

  async start(): Promise<void> {
    this.port = await this.listen(this.settings.port, this.settings.host, false);
    this.traffic.start();
  }

  async stop(): Promise<void> {
    const servers = this.servers;
    this.servers = [];
    await Promise.all(
      servers.map((server) => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        return closed;
      }),
    );
    await this.traffic.stop();
  }
}
