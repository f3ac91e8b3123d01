// Applications on the edge (which application a hostname names is the domains registry's): a
// request goes to the serving instances of its application, round robin; a refused connection
// (before any response) tries the next instance for idempotent methods.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { badGateway, page, sendPage } from '../../../shared/edge/pages.js';
import { proxy, retryable } from '../../../shared/edge/proxy.js';
import { cacheGeneration, checksOf, type EdgeDescription } from '../../../shared/edge/table.js';
import type { Group, Instance } from './host.js';

type Settings = {
  maintenance: { is_enabled: boolean; page_url: string | null };
  ipRestriction: { type: 'allow' | 'deny'; is_enabled: boolean; ip_list: string[] };
  cdn: { enabled: boolean; version: string; purgedAt: string | null };
};

/** Where the edge reaches an instance. */
const upstream = (i: Instance) => `${i.address ?? '127.0.0.1'}:${i.port}`;

/**
 * What a proxy in front serves for an application: its serving group's instances (their ports, on
 * the loopback interface or a swarm node), with the CDN as the proxy's cache; without one
 * (hibernated, starting, stopped) the origin, which wakes it or answers 503: waking needs the
 * control plane (the request is held while Slipway starts the instances), so no proxy can do it
 * alone, and while Slipway is down such a request answers 502. IP restriction and maintenance
 * apply either way.
 */
export function describeGroup(g: Group | undefined, s: Settings): EdgeDescription {
  const checks = checksOf(s.ipRestriction, s.maintenance);
  const servers = (g?.instances ?? []).filter((i) => i.port && !i.stopping).map((i) => ({ address: upstream(i), weight: 1 }));
  if (!servers.length) return { target: { type: 'origin' }, ...checks, cache: null };
  const cache = s.cdn.enabled ? { seconds: 0, generation: cacheGeneration(`${s.cdn.version}|${s.cdn.purgedAt ?? ''}`) } : null;
  return { target: { type: 'upstream', servers }, ...checks, cache };
}

/** Picks the next instance of the group that has a port, round robin. */
function pick(g: Group, skip: Set<Instance>): Instance | undefined {
  const web = g.instances.filter((i) => i.port && !i.stopping && !skip.has(i));
  if (!web.length) return undefined;
  return web[g.next++ % web.length];
}

/**
 * Answers a request from an application's serving group (undefined: not running). When `fallible`
 * (a load balancer asks), an application that cannot answer at all returns 'refused' unanswered.
 */
export async function serveFromGroup(g: Group | undefined, req: IncomingMessage, res: ServerResponse, fallible = false): Promise<void | 'refused'> {
  if (!g) return fallible ? 'refused' : sendPage(res, 503, page('Unavailable', 'The application is not running.'), { 'retry-after': '5' });
  const tried = new Set<Instance>();
  for (;;) {
    const inst = pick(g, tried);
    if (!inst) return fallible ? 'refused' : badGateway(res, 'No instance of the application answered.');
    tried.add(inst);
    inst.inflight++;
    let outcome;
    try {
      outcome = await proxy(req, res, { url: new URL(`http://${upstream(inst)}`) });
    } finally {
      inst.inflight--;
    }
    if (outcome === 'done') return;
    if (!retryable(req.method)) return fallible ? 'refused' : badGateway(res, 'The application could not be reached.');
  }
}
