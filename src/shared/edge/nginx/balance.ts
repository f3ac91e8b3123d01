// Load balancers as nginx serves them (config.ts renders the rest of the configuration).
//
// Each destination is served *as that destination*: a service of the table by its own server
// block, which also listens on a Unix socket of its own under `<dir>/internal/` (a socket has one
// server, so the Host header the load balancer passes on needs no rewriting; IP restriction,
// maintenance and cache apply as on its own hostnames); an external URL or a bucket's CDN hostname
// by a small server of the load balancer's on its own socket, which passes the request on with
// that URL's Host and path. The load balancer's upstream lists the sockets with their weights
// (nginx's smooth weighted round robin is the in-process edge's), leaves a destination that failed
// out for 10 s (DOWN_MS) and retries an idempotent request once on another. Requests that come in
// through a socket are nginx's own: their client address is believed from X-Forwarded-For.
//
// GEO: nginx cannot compute distances per request. The control plane gives the nearest destination
// of each country of the centroid table; a `map` of the believed country header picks it (the others
// are its backups), and anything else is weighted. A believed coordinates header goes to the origin,
// which computes distances (so, with Slipway down, such requests answer 502). Geo headers are
// believed from SLIPWAY_EDGE_TRUSTED_PROXIES when it names any, from every client otherwise (as the
// in-process edge), and nginx passes on only what it believed.
//
// A load balancer whose service destination has no server block here (no hostname in the table),
// or that reaches itself through others (refused by the API; kept as a safety net), is left to the origin.
import { join } from 'node:path';
import type { BalanceDestination, EdgeHost, EdgeTable } from '../table.js';
import type { NginxOptions } from './config.js';
import { geoProxyHeaders, indent, ipEntry, logOwner, originHeaders, PAGES, q, safe, urlPass, urlUpstream } from './syntax.js';

/** How long a destination that failed is left out (the in-process edge's DOWN_MS). */
const DOWN_SECONDS = 10;

/** The directory of the internal sockets (nginx binds them; only Slipway's user may enter it). */
export const internalDir = (dir: string) => join(dir, 'internal');

type Balance = Extract<EdgeHost['target'], { type: 'balance' }>;

export interface BalancePlan {
  /** The hosts a load balancer reaches: host index → the socket its server block also listens on. */
  sockets: Map<number, string>;
  /** The load balancers nginx serves: host index → the socket of each destination (null: not reachable). */
  served: Map<number, (string | null)[]>;
  dir: string;
}

const balanceOf = (h: EdgeHost | undefined): Balance | null => (h?.target.type === 'balance' ? h.target : null);

/** Which load balancers nginx serves, and through which sockets. */
export function planBalance(table: EdgeTable, dir: string): BalancePlan {
  const byOwner = new Map<string, number>();
  table.hosts.forEach((h, i) => {
    const key = `${h.owner.kind}:${h.owner.id}`;
    if (!byOwner.has(key)) byOwner.set(key, i);
  });
  const hostOf = (d: BalanceDestination) => ('service' in d ? byOwner.get(`${d.service.kind}:${d.service.id}`) : undefined);
  // A load balancer that reaches itself through the hosts of its destinations.
  const loops = (start: number): boolean => {
    const seen = new Set<number>();
    const walk = (i: number): boolean => {
      for (const d of balanceOf(table.hosts[i])?.destinations ?? []) {
        const j = hostOf(d);
        if (j === undefined || table.hosts[j]!.maintenance) continue;
        if (j === start) return true;
        if (!seen.has(j)) {
          seen.add(j);
          if (walk(j)) return true;
        }
      }
      return false;
    };
    return walk(start);
  };
  const plan: BalancePlan = { sockets: new Map(), served: new Map(), dir };
  table.hosts.forEach((h, i) => {
    const b = h.maintenance ? null : balanceOf(h);
    if (!b || b.destinations.some((d) => 'service' in d && hostOf(d) === undefined) || loops(i)) return;
    const sockets = b.destinations.map((d, k) => {
      if (!('service' in d)) return `${internalDir(dir)}/u-${i}-${k}.sock`;
      const j = hostOf(d)!;
      if (!plan.sockets.has(j)) plan.sockets.set(j, `${internalDir(dir)}/h-${j}.sock`);
      return plan.sockets.get(j)!;
    });
    plan.served.set(i, sockets);
  });
  return plan;
}

/** A request header as nginx names its variable (`x-country` → `$http_x_country`). */
function headerVar(name: string): string {
  if (!/^[a-z0-9-]{1,64}$/.test(name)) throw new Error(`edge: ${JSON.stringify(name)} is not a header name nginx can read`);
  return `$http_${name.replace(/-/g, '_')}`;
}

/** What the geo headers need at the http level: whether the peer is believed, the believed values. */
function geoHttp(o: NginxOptions): string[] {
  const g = o.geoHeaders;
  // The access log's country (config.ts): none without a country header.
  const none = g?.country ? [] : [`map '' $slipway_geo_country {`, `  default '';`, `}`];
  if (!g || (!g.country && !g.coordinates)) return none;
  const believed = (name: string, v: string) => [`map "$slipway_geo_peer|${headerVar(name)}" ${v} {`, `  '~^1\\|(?<v>.*)$' $v;`, `  default '';`, `}`];
  return [
    ...none,
    // The peer nginx read the request from: a trusted proxy, or (no trusted proxies named) anyone; nginx itself through a socket.
    `geo $realip_remote_addr $slipway_geo_trusted {`,
    `  default ${o.trustedProxies.length ? 0 : 1};`,
    ...o.trustedProxies.map((p) => `  ${ipEntry(p)} 1;`),
    `}`,
    `map $realip_remote_addr $slipway_geo_peer {`,
    `  ~^unix: 1;`,
    `  default $slipway_geo_trusted;`,
    `}`,
    ...(g.country ? believed(g.country, '$slipway_geo_country') : []),
    ...(g.coordinates ? believed(g.coordinates, '$slipway_geo_coordinates') : []),
    ...geoProxyHeaders(o),
  ];
}

/** What the load balancers need at the http level: the internal hop's client address, upstreams, their small servers. */
export function balanceHttp(table: EdgeTable, plan: BalancePlan, o: NginxOptions): string[] {
  const out: string[] = [...geoHttp(o)];
  if (!plan.served.size && !plan.sockets.size) return out;
  out.push(
    // Through a socket, the client is the one the load balancer's server believed (the last X-Forwarded-For entry it added).
    `set_real_ip_from unix:;`,
    ...(o.trustedProxies.length ? [] : [`real_ip_header X-Forwarded-For;`, `real_ip_recursive on;`]),
    // Plain HTTP from a client (not nginx's own hop): what the HTTPS redirect applies to.
    `map "$scheme|$realip_remote_addr" $slipway_plain_http {`,
    `  ~^http\\|unix: 0;`,
    `  ~^http\\| 1;`,
    `  default 0;`,
    `}`,
    `map $realip_remote_addr $slipway_internal {`,
    `  ~^unix: 1;`,
    `  default 0;`,
    `}`,
  );
  if ([...plan.served.keys()].some((i) => routes(table.hosts[i]!, i, plan, o).coordinates)) {
    // Coordinates: to the origin through a server of nginx's own, the only hop that sends the origin secret.
    const socket = `${internalDir(plan.dir)}/origin.sock`;
    out.push(`upstream slipway_lb_origin {`, `  server ${q(`unix:${socket}`)};`, `}`);
    out.push(...smallServer(socket, null, ['proxy_pass http://slipway_origin;', ...originHeaders(o)]));
  }
  for (const i of plan.served.keys()) out.push(...balancer(table.hosts[i]!, i, plan, o));
  return out;
}

const server = (socket: string, weight: number | null, backup = false) =>
  `server ${q(`unix:${safe('socket', socket)}`)}${weight === null ? '' : ` weight=${Math.max(1, Math.round(weight))}`} max_fails=1 fail_timeout=${DOWN_SECONDS}s${backup ? ' backup' : ''};`;

/** How a load balancer nginx serves picks: its weighted destinations, the nearest of each country (GEO), coordinates to the origin. */
function routes(h: EdgeHost, i: number, plan: BalancePlan, o: NginxOptions) {
  const b = balanceOf(h)!;
  const sockets = plan.served.get(i)!;
  const weighted = b.destinations.flatMap((d, k) => (d.weight > 0 && sockets[k] ? [k] : []));
  const nearest = o.geoHeaders?.country ? Object.entries(b.nearest ?? {}).filter(([, k]) => sockets[k]) : [];
  const coordinates = !!(b.nearest && o.origin && o.geoHeaders?.coordinates);
  return { b, sockets, weighted, nearest, coordinates, mapped: nearest.length > 0 || coordinates };
}

/** A load balancer's upstreams (weighted, and for GEO one per nearest destination), its country map, its URL destinations' servers. */
function balancer(h: EdgeHost, i: number, plan: BalancePlan, o: NginxOptions): string[] {
  const { b, sockets, weighted, nearest, coordinates, mapped } = routes(h, i, plan, o);
  const out: string[] = [];
  if (weighted.length)
    out.push(`upstream slipway_lb_${i} {`, ...weighted.map((k) => `  ${server(sockets[k]!, b.destinations[k]!.weight)}`), `  keepalive 16;`, `}`);
  // The nearest destination first; when it fails, the others by weight.
  for (const k of new Set(nearest.map(([, k]) => k)))
    out.push(
      `upstream slipway_lb_${i}_${k} {`,
      `  ${server(sockets[k]!, null)}`,
      ...weighted.filter((x) => x !== k).map((x) => `  ${server(sockets[x]!, b.destinations[x]!.weight, true)}`),
      `  keepalive 16;`,
      `}`,
    );
  if (mapped)
    out.push(
      `map "${coordinates ? '$slipway_geo_coordinates' : ''}|${nearest.length ? '$slipway_geo_country' : ''}" $slipway_lb_pass_${i} {`,
      ...(coordinates ? [`  '~^\\s*-?\\d+(?:\\.\\d+)?\\s*[,; ]\\s*-?\\d+(?:\\.\\d+)?\\s*\\|' slipway_lb_origin;`] : []),
      ...nearest.map(([country, k]) => `  '~*^[^|]*\\|\\s*${country}\\s*$' slipway_lb_${i}_${k};`),
      `  default ${weighted.length ? `slipway_lb_${i}` : `''`};`,
      `}`,
    );
  b.destinations.forEach((d, k) => {
    if ('service' in d || !sockets[k]) return;
    const up = `slipway_lb_${i}_url_${k}`;
    out.push(...urlUpstream(up, d.url), ...smallServer(sockets[k]!, d.owner, urlPass(up, d.url, o)));
  });
  return out;
}

/** A server of nginx's own on a socket that passes every request on (`owner`: logged for it, else not logged). */
function smallServer(socket: string, owner: EdgeHost['owner'] | null, pass: string[]): string[] {
  return [
    `server {`,
    indent([
      `listen ${q(`unix:${safe('socket', socket)}`)};`,
      ...(owner ? logOwner(owner) : [`access_log off;`]),
      `error_page 502 @slipway_502;`,
      `error_page 504 @slipway_504;`,
      `location / {`,
      indent(pass),
      `}`,
      `location @slipway_502 { ${PAGES.badGateway} }`,
      `location @slipway_504 { ${PAGES.timeout} }`,
    ]),
    `}`,
  ];
}

/** The location of a load balancer nginx serves: to its upstream (or the country's), retrying an idempotent request once. */
export function balanceLocation(h: EdgeHost, i: number, plan: BalancePlan, o: NginxOptions): string[] {
  const { weighted, mapped } = routes(h, i, plan, o);
  if (!weighted.length && !mapped) return [`location / { return 502; }`];
  return [
    `location / {`,
    indent([
      ...(mapped ? [`if ($slipway_lb_pass_${i} = '') { return 502; }`, `proxy_pass http://$slipway_lb_pass_${i};`] : [`proxy_pass http://slipway_lb_${i};`]),
      // nginx never retries a method that is not idempotent once it was sent.
      `proxy_next_upstream error timeout http_502;`,
      `proxy_next_upstream_tries 2;`,
    ]),
    `}`,
  ];
}

/** The lines a host reached by a load balancer adds to its server block: its socket, and the origin's Host for what arrives there. */
export function internalListen(plan: BalancePlan, i: number, h: Pick<EdgeHost, 'hostname'>): string[] {
  const socket = plan.sockets.get(i);
  if (!socket) return [];
  return [
    `listen ${q(`unix:${safe('socket', socket)}`)};`,
    // The origin routes by Host: through the socket it is the load balancer's, so the origin is told this host's own.
    `set $slipway_origin_host $http_host;`,
    `if ($slipway_internal) { set $slipway_origin_host ${h.hostname}; }`,
  ];
}

/** The HTTPS redirect's condition: plain HTTP from a client (nginx's own hop through a socket is not redirected). */
export const plainHttp = (plan: BalancePlan, i: number) => (plan.sockets.has(i) ? '$slipway_plain_http' : '$scheme = http');

/** The Host an origin location sends: the client's, or through a socket the host's own (internalListen). */
export const originHost = (plan: BalancePlan, i: number) => (plan.sockets.has(i) ? '$slipway_origin_host' : '$http_host');
