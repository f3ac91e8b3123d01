// Load balancers on the edge (SLIPWAY_RUNTIME=local): `<name>.<base domain>` (the oldest load
// balancer of that name when several companies use it) and the verified, enabled custom domains of
// a load balancer forward each request to one of its enabled destinations:
// - applications, static sites, buckets and other load balancers through their own edge sites (their
//   IP rules and maintenance apply; a load balancer already on the request's path answers 508);
// - external URLs through the proxy (the URL's path prefixes the request's).
// DEFAULT picks by weight (smooth weighted round robin: over any run of requests each destination's
// share is its weight over the total; weight 0 gets nothing). GEO picks the destination nearest the
// client's location (src/shared/edge/geo.ts); without a location it picks by weight like DEFAULT.
// Passive health: a destination that cannot answer (connection refused, not running) is skipped
// for DOWN_MS and, for idempotent methods, the request is retried once on another destination.
//
// `describe` says the same to a proxy in front (nginx/config.ts renders it): the destinations with
// their weights, the nearest destination of each country for GEO, external URLs and buckets' CDN
// hostnames resolved to an address now (external ones through the same guard as at connect time;
// one that cannot be resolved or is refused is left out, as the in-process edge would skip it).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppContext } from '../../shared/context.js';
import type { EdgeRequest, EdgeSite } from '../../shared/edge/index.js';
import { distanceKm, nearestByCountry } from '../../shared/edge/geo.js';
import { badGateway, page, sendPage } from '../../shared/edge/pages.js';
import { proxy, retryable } from '../../shared/edge/proxy.js';
import { serverAddress, type BalanceDestination, type EdgeDescription } from '../../shared/edge/table.js';
import { guardedLookup } from '../../shared/net.js';
import { bucketUpstream } from '../object-storage/index.js';
import { enabledDestinations, loadBalancerById, type DestinationType, type LoadBalancerDestinationsTable, type LoadBalancersTable } from './storage.js';

/** How long a destination that refused is left out. */
export const DOWN_MS = 10_000;

/** The edge service kind of each destination type (EXTERNAL is proxied directly). */
const EDGE_KIND: Record<Exclude<DestinationType, 'EXTERNAL'>, string> = {
  APP: 'app',
  STATIC_SITE: 'static-site',
  OBJECT_STORAGE: 'object-storage',
  LOAD_BALANCER: 'load-balancer',
};

type Destination = LoadBalancerDestinationsTable;

class Balancer {
  /** Smooth weighted round robin state: load balancer -> destination -> current weight. */
  private current = new Map<string, Map<string, number>>();
  /** Destinations left out until the given instant (passive health). */
  private downUntil = new Map<string, number>();

  /** External destinations connect only where webhooks may (never link-local; in production only public addresses). */
  private lookup: ReturnType<typeof guardedLookup>;

  constructor(private app: AppContext) {
    this.lookup = guardedLookup(app.config.production, 'EREFUSEDDESTINATION');
  }

  private get db() {
    return this.app.database.db;
  }

  private site(lb: LoadBalancersTable | undefined): EdgeSite | null {
    if (!lb) return null;
    return { owner: { kind: 'load-balancer', id: lb.id, companyId: lb.company_id }, serve: (req, res, info) => this.serve(lb, req, res, info) };
  }

  async byId(id: string): Promise<EdgeSite | null> {
    return this.site(await loadBalancerById(this.db, id));
  }

  /** The load balancer for a proxy in front: its enabled destinations (those it can reach), weights, and GEO's nearest by country. */
  async describe(id: string): Promise<EdgeDescription | null> {
    const lb = await loadBalancerById(this.db, id);
    if (!lb) return null;
    const located: Destination[] = [];
    const destinations: BalanceDestination[] = [];
    for (const d of await enabledDestinations(this.db, lb.id)) {
      const out = await this.destination(d);
      if (!out) continue;
      located.push(d);
      destinations.push(out);
    }
    const nearest =
      lb.type === 'GEO'
        ? nearestByCountry(located.map((d) => (d.latitude === null || d.longitude === null ? null : { lat: Number(d.latitude), lon: Number(d.longitude) })))
        : null;
    return { target: { type: 'balance', destinations, nearest }, ipRestriction: null, maintenance: null, cache: null };
  }

  /** One destination as a proxy reaches it, or null when it cannot answer (a bucket without public objects, an address refused). */
  private async destination(d: Destination): Promise<BalanceDestination | null> {
    const weight = d.weight;
    if (d.service_type === 'EXTERNAL') {
      const url = new URL(d.url!);
      const address = await serverAddress(url, this.lookup).catch(() => null);
      return address ? { weight, url: { address, tls: url.protocol === 'https:', host: url.host, path: url.pathname.replace(/\/$/, '') }, owner: null } : null;
    }
    if (!d.service_id) return null;
    if (d.service_type !== 'OBJECT_STORAGE') return { weight, service: { kind: EDGE_KIND[d.service_type], id: d.service_id } };
    const bucket = await bucketUpstream(this.app, d.service_id).catch(() => null);
    return bucket?.url ? { weight, url: bucket.url, owner: bucket.owner } : null;
  }

  private async serve(lb: LoadBalancersTable, req: IncomingMessage, res: ServerResponse, info: EdgeRequest): Promise<void | 'refused'> {
    if (info.via?.includes(lb.id)) return sendPage(res, 508, page('Loop detected', 'This request went through the same load balancer twice.'));
    const destinations = await enabledDestinations(this.db, lb.id);
    const sub: EdgeRequest = { ...info, via: [...(info.via ?? []), lb.id], fallible: true };
    const tried = new Set<string>();
    for (let attempt = 0; attempt < (retryable(req.method) ? 2 : 1); attempt++) {
      const d = this.choose(lb, destinations, info, tried);
      if (!d) break;
      tried.add(d.id);
      if ((await this.forward(d, req, res, sub)) !== 'refused') return;
      this.downUntil.set(d.id, Date.now() + DOWN_MS);
    }
    if (info.fallible) return 'refused';
    badGateway(res, tried.size ? 'No destination of the load balancer answered.' : 'The load balancer has no enabled destination.');
  }

  /** The destination for this request among those not tried yet (healthy ones first). */
  private choose(lb: LoadBalancersTable, all: Destination[], info: EdgeRequest, tried: Set<string>): Destination | undefined {
    const now = Date.now();
    const untried = all.filter((d) => !tried.has(d.id));
    const healthy = untried.filter((d) => (this.downUntil.get(d.id) ?? 0) <= now);
    const pool = healthy.length ? healthy : untried;
    if (lb.type === 'GEO' && info.location) {
      let best: Destination | undefined;
      let bestKm = Infinity;
      for (const d of pool) {
        if (d.latitude === null || d.longitude === null) continue;
        const km = distanceKm(info.location, { lat: Number(d.latitude), lon: Number(d.longitude) });
        if (km < bestKm) [best, bestKm] = [d, km];
      }
      if (best) return best;
    }
    return this.weighted(lb.id, pool);
  }

  /** Smooth weighted round robin (nginx's): each pick adds every weight, takes the largest, subtracts the total from it. */
  private weighted(lbId: string, pool: Destination[]): Destination | undefined {
    const weighted = pool.filter((d) => d.weight > 0);
    if (!weighted.length) return undefined;
    let cur = this.current.get(lbId);
    if (!cur) this.current.set(lbId, (cur = new Map()));
    let total = 0;
    let best: Destination | undefined;
    for (const d of weighted) {
      const w = (cur.get(d.id) ?? 0) + d.weight;
      cur.set(d.id, w);
      total += d.weight;
      if (!best || w > cur.get(best.id)!) best = d;
    }
    cur.set(best!.id, cur.get(best!.id)! - total);
    return best;
  }

  private async forward(d: Destination, req: IncomingMessage, res: ServerResponse, sub: EdgeRequest): Promise<'done' | 'refused'> {
    if (d.service_type === 'EXTERNAL') {
      const url = new URL(d.url!);
      return proxy(req, res, { url, host: url.host, lookup: this.lookup });
    }
    const edge = this.app.runtimes.edge!;
    const site = d.service_id ? await edge.site(EDGE_KIND[d.service_type], d.service_id) : null;
    if (!site) return 'refused';
    return (await edge.dispatch(site, req, res, sub)) === 'refused' ? 'refused' : 'done';
  }
}

/** Registers the load balancers' hostnames with the edge (from setup()). */
export function registerEdge(app: AppContext): void {
  if (!app.runtimes.edge) return;
  const b = new Balancer(app);
  app.runtimes.edge.register({ kind: 'load-balancer', byId: (id) => b.byId(id), describe: (id) => b.describe(id) });
}
