// Serves the web dashboard's built files (web/dist, built by `npm run build`) at /. It answers only
// GET/HEAD requests that no route matched (it is called from the not-found handler), so it cannot
// shadow an API route; paths under the API's prefixes keep their JSON 404. Other paths without a
// file answer index.html (the dashboard routes in the browser). Files are read on first request
// and kept in memory: nothing is loaded at start, so cold start is unchanged.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Paths the dashboard never answers: the API (and its OpenAPI document), hooks, probes, S3. */
const RESERVED = ['/v3', '/hooks', '/healthz', '/readyz', '/s3'];
/** Nor anything under `/_` (the operator surface, the object-storage CDN). */
const reserved = (path: string) => path.startsWith('/_') || RESERVED.some((p) => path === p || path.startsWith(`${p}/`));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

// Everything the page loads comes from this server; the API key never leaves it.
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'";

/** web/dist of the package this file belongs to (src/shared/http/ in development, dist/ when bundled). */
export function findDashboardDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'web', 'dist');
    dir = dirname(dir);
  }
  return undefined;
}

const MISSING = `<!doctype html><meta charset="utf-8"><title>Slipway</title>
<h1>Slipway</h1>
<p>The dashboard is not built. Run <code>npm run build</code> (it builds <code>web/dist</code>) and restart the server.</p>
<p>The API is at <a href="/v3/openapi.json">/v3</a>.</p>`;

export function dashboard(root: string | undefined) {
  const cache = new Map<string, { body: Buffer; type: string } | null>();
  async function load(rel: string) {
    if (!root) return null;
    if (cache.has(rel)) return cache.get(rel)!;
    const file = normalize(join(root, rel));
    if (!file.startsWith(root + sep)) return null;
    const hit = await readFile(file).then(
      (body) => ({ body, type: TYPES[extname(file)] ?? 'application/octet-stream' }),
      () => null,
    );
    cache.set(rel, hit);
    return hit;
  }

  /** Answers the request when it is the dashboard's; false leaves it to the JSON 404. */
  return async function serve(req: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const path = req.url.split('?')[0]!;
    if (reserved(path)) return false;
    let rel: string;
    try {
      rel = decodeURIComponent(path).replace(/^\/+/, '');
    } catch {
      return false;
    }
    reply.header('content-security-policy', CSP).header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
    const file = rel && !rel.endsWith('/') ? await load(rel) : null;
    if (file) {
      // Vite names assets by content hash, so they never change under one name.
      reply.header('cache-control', rel.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
      await reply.status(200).type(file.type).send(file.body);
      return true;
    }
    // A missing asset is a 404, not the page (a stale tab asking for an old bundle).
    if (rel.startsWith('assets/') || extname(rel)) return false;
    const index = await load('index.html');
    reply.header('cache-control', 'no-cache');
    if (!index) await reply.status(503).type('text/html; charset=utf-8').send(MISSING);
    else await reply.status(200).type(index.type).send(index.body);
    return true;
  };
}
