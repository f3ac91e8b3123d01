// Serving a static site's release at the edge: the URL path names a file of the release's
// `public/` directory (the index file for directories; with pretty URLs `/about` is `about.html`
// and `/about.html` redirects there), a miss answers the site's error file with 404. Files are
// sent by `send` (content types, ETag and Last-Modified with 304s, ranges); a client that accepts
// brotli or gzip gets the copy compressed at publish time. Cache-Control: assets whose names carry a
// content hash are immutable; HTML is kept a minute by shared caches (the edge's included) and
// revalidated by browsers; other files five minutes.
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basename, extname, join, resolve, sep } from 'node:path';
import send from 'send';
import { acceptedEncodings } from '../../../../shared/edge/cache.js';
import { escapeHtml, page, sendPage } from '../../../../shared/edge/pages.js';
import { encodedDir, publicDir, type Encoding } from './build.js';

export interface ServeOptions {
  indexFile: string;
  errorFile: string | null;
  pretty: boolean;
}

type Resolution = { file: string } | { redirect: string } | { missing: true };

const MISSING: Resolution = { missing: true };
const HTML_CACHE = 'public, max-age=0, s-maxage=60';

/** Cache-Control of a published file. */
export function cacheControlFor(file: string): string {
  const ext = extname(file).toLowerCase();
  if (ext === '.html' || ext === '.htm') return HTML_CACHE;
  // `app.3f9a1c2e.js`, `index-B4x9Kq1z.css`: a token of 8+ characters with a digit before the extension.
  if (/[.-](?=[A-Za-z_-]*\d)[A-Za-z0-9_]{8,}\.[A-Za-z0-9]+$/.test(basename(file))) return 'public, max-age=31536000, immutable';
  return 'public, max-age=300';
}

async function isFile(p: string) {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

async function isDir(p: string) {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

/** `rel` under `base`, or null when it would leave it. */
function within(base: string, rel: string): string | null {
  const p = resolve(base, rel);
  return p === base || p.startsWith(base + sep) ? p : null;
}

/** The file (relative to the release's public directory) a URL path names, a redirect, or nothing. */
export async function resolvePath(pub: string, raw: string, o: ServeOptions): Promise<Resolution> {
  let path: string;
  try {
    path = decodeURIComponent(raw);
  } catch {
    return MISSING;
  }
  if (path.includes('\0') || path.split('/').some((s) => s === '..')) return MISSING;
  const rel = path.replace(/^\/+/, '');
  const abs = within(pub, rel);
  if (!abs) return MISSING;
  const index = o.indexFile || 'index.html';
  if (o.pretty && /\.html$/.test(rel) && (await isFile(abs))) {
    const target = basename(rel) === index ? raw.slice(0, raw.lastIndexOf('/') + 1) : raw.replace(/\.html$/, '');
    return { redirect: target || '/' };
  }
  if (path.endsWith('/')) return (await isFile(join(abs, index))) ? { file: join(rel, index) } : MISSING;
  if (await isFile(abs)) return { file: rel };
  if (o.pretty && (await isFile(`${abs}.html`))) return { file: `${rel}.html` };
  if ((await isDir(abs)) && (await isFile(join(abs, index)))) return { redirect: `${raw}/` };
  return MISSING;
}

/** The site's error file with 404, or the edge's own 404 page. */
async function notFound(req: IncomingMessage, res: ServerResponse, pub: string, errorFile: string | null) {
  const p = errorFile ? within(pub, errorFile.replace(/^\/+/, '')) : null;
  if (p && (await isFile(p))) {
    const body = await readFile(p);
    const html = /\.html?$/i.test(p);
    res.writeHead(404, {
      'content-type': html ? 'text/html; charset=utf-8' : 'application/octet-stream',
      'content-length': body.length,
      'cache-control': HTML_CACHE,
    });
    return void res.end(req.method === 'HEAD' ? undefined : body);
  }
  sendPage(res, 404, page('Not found', `Nothing is published at ${escapeHtml(new URL(req.url ?? '/', 'http://x').pathname)}.`));
}

/** Answers a request from a release directory. */
export async function serveRelease(req: IncomingMessage, res: ServerResponse, release: string, o: ServeOptions): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return sendPage(res, 405, page('Method not allowed', 'A static site answers GET and HEAD.'), { allow: 'GET, HEAD' });
  }
  const url = new URL(req.url ?? '/', 'http://edge');
  const pub = publicDir(release);
  const r = await resolvePath(pub, url.pathname, o);
  if ('missing' in r) return notFound(req, res, pub, o.errorFile);
  if ('redirect' in r) {
    const location = r.redirect + url.search;
    res.writeHead(301, { location, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'public, max-age=300' });
    return void res.end(req.method === 'HEAD' ? undefined : `<a href="${escapeHtml(location)}">Moved permanently</a>\n`);
  }
  const accepted = acceptedEncodings(req);
  const variants = (['br', 'gzip'] as Encoding[]).filter((e) => existsSync(join(encodedDir(release, e), r.file)));
  const enc = variants.find((e) => accepted[e]);
  const root = enc ? encodedDir(release, enc) : pub;
  const path = '/' + r.file.split(sep).map(encodeURIComponent).join('/');
  await new Promise<void>((done) => {
    const stream = send(req, path, { root, index: false, cacheControl: false, dotfiles: 'allow' });
    stream.on('headers', (out: ServerResponse) => {
      out.setHeader('cache-control', cacheControlFor(r.file));
      if (variants.length) out.setHeader('vary', 'Accept-Encoding');
      if (enc) out.setHeader('content-encoding', enc);
    });
    stream.on('error', (err: Error & { status?: number; headers?: Record<string, string> }) => {
      if (res.headersSent) res.destroy();
      else if (err.status === 404) return void notFound(req, res, pub, o.errorFile).finally(done);
      else {
        const status = err.status ?? 500;
        sendPage(res, status, page(status === 416 ? 'Range not satisfiable' : 'Error', escapeHtml(err.message)), err.headers ?? {});
      }
      done();
    });
    res.once('close', () => done());
    stream.pipe(res);
  });
}
