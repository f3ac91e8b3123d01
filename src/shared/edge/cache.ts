// The edge's response cache (the "CDN" of static sites, and of applications with their CDN on):
// whole responses kept in memory, bounded by SLIPWAY_EDGE_CACHE_MB (least recently used go
// first), keyed by site + version (e.g. a static site's release) + method + URL + the encodings
// the client accepts. A response is kept only when it says so: status 200, 301 or 404 with a
// positive `s-maxage` or `max-age`, no `no-store`/`no-cache`/`private`, no Set-Cookie, no Vary
// beyond Accept-Encoding. Range requests and requests with credentials go past it.
//
// Purges: `purge(owner)` empties one site's entries in this process; every other process learns
// of a purge through the site's `cache_purged_at` (read with the site on every request), and
// serves none of its entries stored before that instant.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import fresh from 'fresh';
import type { EdgeRequest } from './index.js';

export interface CacheScope {
  /** The site the entries belong to (what a purge empties). */
  owner: string;
  /** Changes when what the site serves changes at once (a static site's release, its settings). */
  version?: string;
  /** The site's last purge (ISO instant): entries stored before it are not served. */
  purgedAt?: string | null;
}

interface Entry {
  owner: string;
  status: number;
  headers: OutgoingHttpHeaders;
  body: Buffer;
  storedAt: number;
  expiresAt: number;
  size: number;
}

const CACHEABLE_STATUS = new Set([200, 301, 404]);

/** The encodings a request accepts among those the edge uses (q=0 refuses one). */
export function acceptedEncodings(req: IncomingMessage): { br: boolean; gzip: boolean } {
  const out = { br: false, gzip: false };
  for (const part of String(req.headers['accept-encoding'] ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)).find(Boolean);
    if (q && Number(q[1]) === 0) continue;
    if (name === 'br' || name === 'gzip') out[name] = true;
  }
  return out;
}

/** How long (seconds) a response may be kept by a shared cache, or 0. */
export function sharedMaxAge(cacheControl: string | undefined): number {
  if (!cacheControl) return 0;
  const d = new Map<string, string>();
  for (const part of cacheControl.toLowerCase().split(',')) {
    const [k, v] = part.trim().split('=');
    if (k) d.set(k, (v ?? '').replace(/^"|"$/g, ''));
  }
  if (d.has('no-store') || d.has('private') || d.has('no-cache')) return 0;
  const n = Number(d.get('s-maxage') ?? d.get('max-age'));
  return Number.isFinite(n) && n > 0 ? n : 0;
}

const header = (h: OutgoingHttpHeaders, k: string) => {
  const v = h[k];
  return v === undefined ? undefined : Array.isArray(v) ? v.join(', ') : String(v);
};

/** Header names in lower case (writeHead accepts any case). */
function lower(h: OutgoingHttpHeaders | undefined): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h ?? {})) out[k.toLowerCase()] = v;
  return out;
}

export class EdgeCache {
  private entries = new Map<string, Entry>();
  private bytes = 0;
  readonly maxEntryBytes: number;

  constructor(readonly maxBytes: number) {
    this.maxEntryBytes = Math.min(10 * 1024 * 1024, Math.floor(maxBytes / 4));
  }

  /** Memory held, and entries (tests and the banner). */
  get stats() {
    return { bytes: this.bytes, entries: this.entries.size };
  }

  /** Drops every entry of a site (in this process; see the file's comment for the others). */
  purge(owner: string): void {
    for (const [k, e] of this.entries) if (e.owner === owner) this.drop(k, e);
  }

  private drop(key: string, e: Entry) {
    this.entries.delete(key);
    this.bytes -= e.size;
  }

  private lookup(key: string, scope: CacheScope, now: number): Entry | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    const purged = scope.purgedAt ? Date.parse(scope.purgedAt) : 0;
    if (e.expiresAt <= now || e.storedAt < purged) {
      this.drop(key, e);
      return undefined;
    }
    // Most recently used last: eviction takes the first.
    this.entries.delete(key);
    this.entries.set(key, e);
    return e;
  }

  private store(key: string, e: Entry) {
    const old = this.entries.get(key);
    if (old) this.drop(key, old);
    this.entries.set(key, e);
    this.bytes += e.size;
    for (const [k, x] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(k, x);
    }
  }

  /**
   * Answers from the cache when it can (setting `info.cached`), else lets `fill` answer and keeps
   * the response when it may. Every answer carries `X-Cache: HIT` or `MISS`.
   */
  async serve(req: IncomingMessage, res: ServerResponse, info: EdgeRequest, scope: CacheScope, fill: () => Promise<void>): Promise<void> {
    const method = req.method ?? 'GET';
    if ((method !== 'GET' && method !== 'HEAD') || req.headers.range || req.headers.authorization || this.maxBytes === 0) return fill();
    const enc = acceptedEncodings(req);
    const key = [scope.owner, scope.version ?? '', method, req.url ?? '/', `${enc.br ? 'br' : ''},${enc.gzip ? 'gzip' : ''}`].join('\n');
    const now = Date.now();
    const hit = this.lookup(key, scope, now);
    if (hit) {
      info.cached = true;
      const headers: OutgoingHttpHeaders = { ...hit.headers, age: String(Math.floor((now - hit.storedAt) / 1000)), 'x-cache': 'HIT' };
      if (hit.status === 200 && fresh(req.headers, { etag: header(headers, 'etag'), 'last-modified': header(headers, 'last-modified') })) {
        for (const h of ['content-length', 'content-type', 'content-encoding']) delete headers[h];
        res.writeHead(304, headers);
        return void res.end();
      }
      res.writeHead(hit.status, headers);
      return void res.end(method === 'HEAD' ? undefined : hit.body);
    }
    res.setHeader('x-cache', 'MISS');
    this.capture(res, key, scope.owner, method === 'HEAD');
    await fill();
  }

  /** Collects the response `res` sends and keeps it once sent, when it may be kept. */
  private capture(res: ServerResponse, key: string, owner: string, head: boolean) {
    let status = 0;
    let headers: OutgoingHttpHeaders = {};
    let keep = true;
    let size = 0;
    const chunks: Buffer[] = [];
    const writeHead = res.writeHead;
    res.writeHead = function (this: ServerResponse, code: number, ...rest: unknown[]) {
      const given = rest.find((x) => typeof x === 'object' && x !== null);
      if (Array.isArray(given)) keep = false;
      status = code;
      headers = { ...lower(res.getHeaders()), ...lower(given as OutgoingHttpHeaders | undefined) };
      return (writeHead as (...a: unknown[]) => ServerResponse).call(this, code, ...rest);
    } as typeof res.writeHead;
    const add = (chunk: unknown, encoding?: unknown) => {
      if (!keep || chunk === undefined || chunk === null || typeof chunk === 'function') return;
      const b =
        typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8') : Buffer.from(chunk as Uint8Array);
      size += b.length;
      if (size > this.maxEntryBytes) {
        keep = false;
        chunks.length = 0;
      } else chunks.push(b);
    };
    const write = res.write;
    res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
      add(chunk, rest[0]);
      return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof res.write;
    const end = res.end;
    res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
      add(chunk, rest[0]);
      return (end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
    } as typeof res.end;
    res.once('finish', () => {
      if (!keep || !CACHEABLE_STATUS.has(status) || headers['set-cookie'] !== undefined) return;
      const vary = (header(headers, 'vary') ?? '')
        .toLowerCase()
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean);
      if (vary.some((v) => v !== 'accept-encoding')) return;
      const ttl = sharedMaxAge(header(headers, 'cache-control'));
      if (!ttl) return;
      const body = Buffer.concat(chunks);
      const now = Date.now();
      const { 'x-cache': _x, date: _d, connection: _c, 'keep-alive': _k, 'transfer-encoding': _t, ...kept } = headers;
      if (!head && kept['content-length'] === undefined) kept['content-length'] = String(body.length);
      const approx = body.length + JSON.stringify(kept).length + key.length + 200;
      this.store(key, { owner, status, headers: kept, body, storedAt: now, expiresAt: now + ttl * 1000, size: approx });
    });
  }
}
