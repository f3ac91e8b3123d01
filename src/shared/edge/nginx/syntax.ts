// What every part of the nginx configuration writes with (config.ts, balance.ts): values checked
// before they are written, quoting, indentation, the edge's own pages, the proxy headers.
import { isIpOrCidr } from '../../net.js';
import { page } from '../pages.js';
import type { EdgeHost, UrlTarget } from '../table.js';
import type { NginxOptions } from './config.js';

/** The header carrying `originSecret` from nginx to Slipway's origin (never to an application). */
export const ORIGIN_SECRET_HEADER = 'x-slipway-origin-secret';

// Owners, addresses and paths come from the control plane (config.ts says why a `$` is refused).
const ADDRESS = /^(?:[a-z0-9.-]+|\[[0-9a-f:.]+\]):\d{1,5}$/i;
const unsafe = (v: string) => [...v].some((c) => c === '$' || c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127);

export function safe(what: string, v: string): string {
  if (unsafe(v)) throw new Error(`edge: ${what} ${JSON.stringify(v)} cannot be written into the nginx configuration`);
  return v;
}

export function address(what: string, v: string): string {
  if (!ADDRESS.test(v)) throw new Error(`edge: ${what} ${JSON.stringify(v)} is not host:port`);
  return v;
}

/** A string nginx reads literally (single quotes; callers make sure it holds no `$`). */
export const q = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

export const indent = (lines: string[], n = 2) => lines.map((l) => (l ? ' '.repeat(n) + l : l)).join('\n');

export function ipEntry(v: string): string {
  if (!isIpOrCidr(v)) throw new Error(`edge: ${JSON.stringify(v)} is not an IP address or CIDR range`);
  return v;
}

const edgePage = (status: number, title: string, body: string, extra = '') =>
  `default_type text/html; charset utf-8; add_header Cache-Control no-store always; ${extra}return ${status} ${q(page(title, body).trimEnd())};`;

export const PAGES = {
  forbidden: edgePage(403, 'Forbidden', 'Your address may not reach this service.'),
  unknown: edgePage(404, 'Not found', 'Nothing is served at this address.'),
  missing: edgePage(404, 'Not found', 'Nothing is published at this address.'),
  notAllowed: edgePage(405, 'Method not allowed', 'A static site answers GET and HEAD.', `add_header Allow 'GET, HEAD' always; `),
  badGateway: edgePage(502, 'Bad gateway', 'The service could not be reached.'),
  timeout: edgePage(504, 'Gateway timeout', 'The service did not answer in time.'),
};

export const PROXY_HEADERS = [
  `proxy_set_header Host $http_host;`,
  `proxy_set_header Upgrade $http_upgrade;`,
  `proxy_set_header Connection $slipway_connection;`,
  `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;`,
  `proxy_set_header X-Forwarded-Proto $slipway_proto;`,
  `proxy_set_header X-Forwarded-Host $host;`,
  `proxy_set_header X-Real-IP $remote_addr;`,
];

/**
 * The proxy headers of a location passing to the origin or the fallback: the http level's (a
 * location's own proxy_set_header replaces them all) and the origin secret, which replaces any the
 * client sent. Applications' upstreams never get it.
 */
export function originHeaders(o: NginxOptions, host = '$http_host'): string[] {
  if (!o.originSecret && host === '$http_host' && !o.geoHeaders) return [];
  if (o.originSecret && !/^[0-9a-f]{32,128}$/.test(o.originSecret)) throw new Error('edge: the origin secret must be 32 to 128 hex digits');
  return [
    `proxy_set_header Host ${host};`,
    ...PROXY_HEADERS.slice(1),
    ...geoProxyHeaders(o),
    ...(o.originSecret ? [`proxy_set_header ${ORIGIN_SECRET_HEADER} ${o.originSecret};`] : []),
  ];
}

/** The log format's owner of the requests a server answers. */
export const logOwner = (owner: EdgeHost['owner']) => [
  `set $slipway_kind ${q(safe('owner kind', owner.kind))};`,
  `set $slipway_id ${q(safe('owner id', owner.id))};`,
  `set $slipway_company ${q(safe('owner company', owner.companyId))};`,
];

/**
 * The geo headers as passed on by every proxying location: what nginx believed, or nothing (an
 * empty value is not sent), so neither an application nor the origin sees one nginx did not believe.
 */
export function geoProxyHeaders(o: NginxOptions): string[] {
  const g = o.geoHeaders;
  if (!g) return [];
  return [
    ...(g.country ? [`proxy_set_header ${g.country} $slipway_geo_country;`] : []),
    ...(g.coordinates ? [`proxy_set_header ${g.coordinates} $slipway_geo_coordinates;`] : []),
  ];
}

/**
 * An HTTP(S) server outside the table as nginx reaches it (a load balancer's URL destination, a
 * bucket's CDN hostname on the API server): its upstream `name`, and the lines of a location passing
 * the request to it with that server's Host, the path after `url.path`. The client's address goes in
 * X-Forwarded-For only: X-Real-IP is believed by Slipway's origin alone (with the origin secret),
 * and such a server is not the origin.
 */
export function urlUpstream(name: string, url: UrlTarget): string[] {
  return [`upstream ${name} {`, `  server ${address('destination', url.address)};`, `  keepalive 8;`, `}`];
}

export function urlPass(name: string, url: UrlTarget, o: NginxOptions): string[] {
  const path = safe('destination path', url.path);
  if (/[\s;{}'"\\]/.test(path)) throw new Error(`edge: destination path ${JSON.stringify(path)} cannot be written into the nginx configuration`);
  const host = safe('destination host', url.host);
  return [
    `proxy_pass ${url.tls ? 'https' : 'http'}://${name}${path}$request_uri;`,
    ...PROXY_HEADERS.filter((l) => !l.startsWith('proxy_set_header Host ') && !l.startsWith('proxy_set_header X-Real-IP ')),
    ...geoProxyHeaders(o),
    `proxy_set_header Host ${q(host)};`,
    ...(url.tls ? [`proxy_ssl_server_name on;`, `proxy_ssl_name ${q(host.replace(/:\d+$/, '').replace(/^\[|\]$/g, ''))};`] : []),
  ];
}
