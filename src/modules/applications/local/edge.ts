// The HTTP edge of the local runtime: one server on SLIPWAY_EDGE_PORT that routes by Host to the
// serving instances of an application (round robin), enforcing maintenance mode (503 with
// Retry-After) and the IP restriction (403) first. `<name>.<base domain>` names an application
// (the oldest of that name when several companies use it); a verified, enabled custom domain
// names its application; anything else is 404.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import ipaddr from 'ipaddr.js';
import type { Group, Instance } from './supervisor.js';

export interface Route {
  appId: string;
  maintenance: { is_enabled: boolean; page_url: string | null };
  ipRestriction: { type: 'allow' | 'deny'; is_enabled: boolean; ip_list: string[] };
}

export interface EdgeDeps {
  /** The application a hostname routes to, with its edge settings; null: unknown host. */
  resolve(host: string): Promise<Route | null>;
  /** The serving group of an application. */
  serving(appId: string): Group | undefined;
  trustedProxies: string[];
}

export const RETRY_AFTER_SECONDS = 60;

function parse(a: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  try {
    const ip = ipaddr.parse(a.trim());
    return ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
  } catch {
    return null;
  }
}

/** Whether an address is in a list of addresses and CIDR ranges. */
export function inList(address: string, list: string[]): boolean {
  const ip = parse(address);
  if (!ip) return false;
  return list.some((entry) => {
    try {
      if (entry.includes('/')) {
        const [range, bits] = ipaddr.parseCIDR(entry);
        return ip.kind() === range.kind() && ip.match([range, bits]);
      }
      const other = parse(entry);
      return !!other && other.kind() === ip.kind() && other.toString() === ip.toString();
    } catch {
      return false;
    }
  });
}

/** The client's address: the socket's, or (from a trusted proxy) the last X-Forwarded-For entry not a trusted proxy. */
export function clientAddress(req: IncomingMessage, trusted: string[]): string {
  let addr = req.socket.remoteAddress ?? '';
  if (!trusted.length || !inList(addr, trusted)) return addr;
  const hops = String(req.headers['x-forwarded-for'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  while (hops.length) {
    addr = hops.pop()!;
    if (!inList(addr, trusted)) return addr;
  }
  return addr;
}

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><p>${body}</p></body></html>\n`;
const escape = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

function send(res: ServerResponse, status: number, html: string, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(html);
}

/** Picks the next instance of the group that has a port, round robin. */
function pick(g: Group, skip: Set<Instance>): Instance | undefined {
  const web = g.instances.filter((i) => i.port && !i.stopping && !skip.has(i));
  if (!web.length) return undefined;
  return web[g.next++ % web.length];
}

export function createEdge(deps: EdgeDeps): Server {
  return createServer((req, res) => {
    void handle(deps, req, res).catch(() => {
      if (!res.headersSent) send(res, 502, page('Bad gateway', 'The application could not be reached.'));
      else res.destroy();
    });
  });
}

async function handle(deps: EdgeDeps, req: IncomingMessage, res: ServerResponse) {
  const host = String(req.headers.host ?? '')
    .toLowerCase()
    .replace(/:\d+$/, '')
    .replace(/\.$/, '');
  const route = host ? await deps.resolve(host) : null;
  if (!route) return send(res, 404, page('Not found', `No application is served at ${escape(host || 'this address')}.`));
  const ipr = route.ipRestriction;
  if (ipr.is_enabled) {
    const listed = inList(clientAddress(req, deps.trustedProxies), ipr.ip_list);
    if (ipr.type === 'allow' ? !listed : listed) return send(res, 403, page('Forbidden', 'Your address may not reach this application.'));
  }
  if (route.maintenance.is_enabled) {
    const url = route.maintenance.page_url;
    const body = url
      ? `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=${escape(url)}"><title>Maintenance</title></head><body><p>This application is under maintenance: <a href="${escape(url)}">${escape(url)}</a></p></body></html>\n`
      : page('Under maintenance', 'This application is under maintenance. Please try again later.');
    return send(res, 503, body, { 'retry-after': String(RETRY_AFTER_SECONDS) });
  }
  const g = deps.serving(route.appId);
  if (!g) return send(res, 503, page('Unavailable', 'The application is not running.'), { 'retry-after': '5' });
  await forward(g, req, res, new Set());
}

/** Proxies the request to an instance; a refused connection (before any response) tries the next instance. */
function forward(g: Group, req: IncomingMessage, res: ServerResponse, tried: Set<Instance>): Promise<void> {
  const inst = pick(g, tried);
  if (!inst) {
    send(res, 502, page('Bad gateway', 'No instance of the application answered.'));
    return Promise.resolve();
  }
  tried.add(inst);
  inst.inflight++;
  return new Promise((resolve) => {
    let done = false;
    const end = () => {
      if (done) return;
      done = true;
      inst.inflight--;
      resolve();
    };
    const xff = [req.headers['x-forwarded-for'], req.socket.remoteAddress].filter(Boolean).join(', ');
    const up = request(
      {
        host: '127.0.0.1',
        port: inst.port!,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, 'x-forwarded-for': xff, 'x-forwarded-host': req.headers.host ?? '' },
        agent: false,
      },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
        r.on('end', end);
        r.on('error', () => {
          res.destroy();
          end();
        });
      },
    );
    up.on('error', (e: NodeJS.ErrnoException) => {
      if (res.headersSent) {
        res.destroy();
        return end();
      }
      // Nothing was sent upstream that it could have acted on: another instance may answer.
      const retry = (e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET') && ['GET', 'HEAD', 'OPTIONS'].includes(req.method ?? '');
      inst.inflight--;
      done = true;
      if (retry) return void forward(g, req, res, tried).then(resolve);
      send(res, 502, page('Bad gateway', 'The application could not be reached.'));
      resolve();
    });
    req.pipe(up);
  });
}
