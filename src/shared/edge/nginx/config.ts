// An EdgeTable as one whole nginx configuration (nginx 1.22, Debian's package). Everything nginx
// writes or reads of its own lives under `dir`; nothing of /etc/nginx is used.
//
// One server block per hostname. The checks every site shares run in the server's rewrite phase,
// in the in-process edge's order: HTTPS redirect, IP restriction (403, a `geo` lookup of the real
// client address: a radix tree, and it must come before maintenance, which `allow`/`deny` in the
// later access phase could not), then maintenance (503). The edge's own pages are answered from
// named locations, which do not run the server's rewrite phase again; the site's and the
// maintenance pages from exact internal locations (an error_page URI turns POST into GET).
//
// ACME HTTP-01 answers (`/.well-known/acme-challenge/<token>`, files under `acme-challenge/` in
// `dir`) are served by every server over plain HTTP and HTTPS, before those checks: a server-level
// rewrite directive runs before locations are matched, so no location can skip the checks; a
// `break` ahead of them, taken for that path only, ends the server's rewrite phase there.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { isWildcard, servableIndexFile, type EdgeHost, type EdgeTable, type EdgeTarget } from '../table.js';
import { balanceHttp, balanceLocation, internalListen, originHost, planBalance, plainHttp, type BalancePlan } from './balance.js';
import { address, indent, ipEntry, logOwner, originHeaders, PAGES, PROXY_HEADERS, q, safe, urlPass, urlUpstream } from './syntax.js';

/** Seconds a client is told to wait during maintenance (as the in-process edge). */
const RETRY_AFTER_SECONDS = 60;

export interface Listen {
  host: string;
  port: number;
}

export interface NginxOptions {
  /** nginx's own directory: pid file, logs, temp paths, cache, pages, the status socket. */
  dir: string;
  http: Listen;
  https: Listen | null;
  /** host:port of Slipway's in-process origin (`origin` targets). */
  origin: string;
  /**
   * host:port where the default server sends hostnames the table does not name (preview names,
   * wildcard domains, unknown hosts: the origin routes them by the registry and logs them itself);
   * empty: the default server answers 404.
   */
  fallback?: string;
  /** Addresses and CIDR ranges whose X-Forwarded-For is believed. */
  trustedProxies: string[];
  /** The operator's geo headers (lower case; GEO load balancers): believed from trusted proxies only, when any are named (balance.ts). */
  geoHeaders?: { country: string | null; coordinates: string | null };
  /**
   * Sent to the origin and the fallback only, as ORIGIN_SECRET_HEADER: the origin believes
   * X-Real-IP (and that nginx logged the request) only with it (hex; absent: not sent).
   */
  originSecret?: string;
  /** The file nginx writes its access log to, buffered (access-log.ts tails it). */
  accessLog: string;
  /** Answered by the status socket, so the applier can tell a reload took effect. */
  generation: number;
  workers?: number;
  /** Connections per worker, clients and upstreams together (default 16384). */
  workerConnections?: number;
  /** The workers' open file limit (default: the limit nginx was started with). */
  openFiles?: number;
  /** The workers' user when nginx starts as root (nginx's default: nobody); ignored otherwise. */
  user?: string;
  /** Disk the response cache may use (default 256 MiB). */
  cacheBytes?: number;
  /** The brotli_static module's file (Debian's libnginx-mod-http-brotli-static), or null: gzip copies only. */
  brotliModule?: string | null;
}

/** The folder, under nginx's directory, of the HTTP-01 key authorizations nginx answers (a file per token). */
export const acmeChallengeDir = (dir: string) => join(dir, 'acme-challenge');

/** The Unix socket of the status server (GET /generation, GET /status). */
export const statusSocket = (dir: string) => join(dir, 'status.sock');

/** Files a configuration refers to besides itself (maintenance pages), by path relative to `dir`. */
export function nginxFiles(table: EdgeTable): Record<string, string> {
  const files: Record<string, string> = {};
  for (const h of table.hosts) if (h.maintenance) files[pageFile(h.maintenance.html)] = h.maintenance.html;
  return files;
}

const pageFile = (html: string) => `pages/${createHash('sha256').update(html).digest('hex').slice(0, 32)}.html`;

// Hostnames, owners, addresses and paths come from the control plane. Strings are quoted; a `$`
// (which nginx would expand, and has no escape for) or a control character is refused.
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/;
/** Whether a hostname of the table can be a server name here (odd names are left to the default server). */
export const nameable = (hostname: string) => HOSTNAME.test(isWildcard(hostname) ? hostname.slice(2) : hostname);

/** A hostname as a regular expression of its own characters (a hostname's only special one is the dot). */
const literal = (hostname: string) => hostname.replace(/\./g, '\\.');

/**
 * A host's server name. A wildcard is a regular expression of exactly one more label, as the
 * registry's routeOf matches it (nginx's own `*.example.com` would also take `a.b.example.com`):
 * exact names win over it, and no two wildcards' expressions match the same name, so their order
 * does not matter.
 */
const serverName = (hostname: string) => (isWildcard(hostname) ? `~^[^.]+\\.${literal(hostname.slice(2))}$` : hostname);

/**
 * The preview names of `hostname` (`<label>--<hostname>`, the label the part before the first `--`
 * and with no dot: the registry's splitPreview) as a regular expression.
 */
const previewNames = (hostname: string) => `~^(?:[^.-]|-[^.-])+--${literal(hostname)}$`;

const listen = (l: Listen) => `${l.host.includes(':') ? `[${l.host}]` : l.host}:${l.port}`;

// nginx's own list is under /etc/nginx; these are the types sites commonly publish.
const TYPES: Record<string, string> = {
  'text/html': 'html htm',
  'text/css': 'css',
  'text/plain': 'txt',
  'text/xml': 'xml',
  'text/markdown': 'md',
  'text/csv': 'csv',
  'text/calendar': 'ics',
  'application/javascript': 'js mjs',
  'application/json': 'json map',
  'application/manifest+json': 'webmanifest',
  'application/rss+xml': 'rss',
  'application/atom+xml': 'atom',
  'application/wasm': 'wasm',
  'application/pdf': 'pdf',
  'application/zip': 'zip',
  'application/gzip': 'gz',
  'application/x-tar': 'tar',
  'application/octet-stream': 'bin exe dll iso img',
  'image/png': 'png',
  'image/jpeg': 'jpg jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/avif': 'avif',
  'image/svg+xml': 'svg svgz',
  'image/x-icon': 'ico',
  'font/woff': 'woff',
  'font/woff2': 'woff2',
  'font/ttf': 'ttf',
  'font/otf': 'otf',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'audio/wav': 'wav',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
};

const GZIP_TYPES =
  'text/css text/plain text/xml text/markdown text/csv text/calendar application/javascript application/json application/manifest+json application/rss+xml application/atom+xml application/wasm image/svg+xml image/x-icon font/ttf font/otf';

// serve.ts's cacheControlFor: HTML a minute in shared caches, content-hashed names for a year.
const STATIC_CACHE_CONTROL = `map $uri $slipway_static_cc {
    ~*\\.html?$ 'public, max-age=0, s-maxage=60';
    '~[.-](?=[A-Za-z_-]*\\d)[A-Za-z0-9_]{8,}\\.[A-Za-z0-9]+$' 'public, max-age=31536000, immutable';
    default 'public, max-age=300';
  }`;

// The JSON line of one answered request (access-log.ts reads it).
const LOG_FORMAT = [
  '{"kind":"$slipway_kind","id":"$slipway_id","company":"$slipway_company","method":"$slipway_method"',
  '"path":"$request_uri","status":$status,"bytes":$body_bytes_sent,"time":$request_time,"client":"$remote_addr"',
  '"host":"$host","ua":"$http_user_agent","referer":"$http_referer","cache":"$upstream_cache_status","country":"$slipway_geo_country"',
  '"at":$msec}',
].join(',');

// Not logged: the ACME server's requests are no visitor's traffic.
const acmeChallenge = (dir: string) =>
  `location ^~ /.well-known/acme-challenge/ { alias ${q(`${acmeChallengeDir(dir)}/`)}; default_type text/plain; access_log off; etag off; add_header Cache-Control no-store always; }`;

/** A complete nginx.conf serving `table`. Throws on a value it cannot write safely, or a hostname given twice. */
export function renderNginx(table: EdgeTable, o: NginxOptions): string {
  const dir = safe('directory', o.dir.replace(/\/+$/, ''));
  const seen = new Set<string>();
  const unknown = table.unknown ?? { hostnames: [], previewsOf: [] };
  const names = [
    ...table.hosts.map((h) => ({ name: h.hostname, ok: nameable })),
    ...unknown.hostnames.map((name) => ({ name, ok: HOSTNAME.test.bind(HOSTNAME) })),
  ];
  for (const { name, ok } of names) {
    if (!ok(name)) throw new Error(`edge: invalid hostname ${JSON.stringify(name)}`);
    if (seen.has(name)) throw new Error(`edge: hostname ${name} is given twice (one owner per hostname)`);
    seen.add(name);
  }
  for (const name of unknown.previewsOf) if (!HOSTNAME.test(name)) throw new Error(`edge: invalid hostname ${JSON.stringify(name)}`);
  const workers = o.workers ?? 1;
  const connections = o.workerConnections ?? 16384;
  const cached = table.hosts.some((h) => h.cache && h.target.type !== 'static');
  const http: string[] = [
    `types {`,
    ...Object.entries(TYPES).map(([t, ext]) => `  ${t} ${ext};`),
    `}`,
    `default_type application/octet-stream;`,
    `server_tokens off;`,
    `sendfile on;`,
    `tcp_nopush on;`,
    `keepalive_timeout 75s;`,
    `keepalive_requests 10000;`,
    `client_max_body_size 0;`,
    `large_client_header_buffers 4 16k;`,
    // Redirects say the path only: the port nginx listens on is not the one clients see behind NAT.
    `absolute_redirect off;`,
    `server_names_hash_bucket_size 256;`,
    `server_names_hash_max_size ${Math.max(1024, 4 * table.hosts.length)};`,
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${q(`${dir}/tmp/${t}`)};`),
    ...(cached
      ? [
          `proxy_cache_path ${q(`${dir}/cache`)} levels=1:2 keys_zone=slipway_cache:16m max_size=${o.cacheBytes ?? 256 * 1024 * 1024} inactive=1h use_temp_path=off;`,
        ]
      : []),
    `log_format slipway escape=json ${q(LOG_FORMAT)};`,
    // Buffered: each worker writes 64 KiB at a time, or what it has after a second (access-log.ts tails the file).
    `access_log ${q(safe('access log', o.accessLog))} slipway buffer=64k flush=1s;`,
    // Files of a release never change in place (a new release is a new directory).
    `open_file_cache max=10000 inactive=60s;`,
    `open_file_cache_errors on;`,
    // The client address: the socket's, or from a trusted proxy the last X-Forwarded-For entry that is not one.
    ...(o.trustedProxies.length
      ? [...o.trustedProxies.map((p) => `set_real_ip_from ${ipEntry(p)};`), `real_ip_header X-Forwarded-For;`, `real_ip_recursive on;`]
      : []),
    // The client's scheme: through a load balancer's internal socket (balance.ts), the one its server saw.
    `map "$realip_remote_addr|$http_x_forwarded_proto" $slipway_proto {`,
    `  '~^unix:[^|]*\\|(?<p>https?)$' $p;`,
    `  default $scheme;`,
    `}`,
    // WebSocket upgrades pass; other requests keep the upstream connection alive.
    `map $http_upgrade $slipway_connection {`,
    `  default upgrade;`,
    `  '' '';`,
    `}`,
    STATIC_CACHE_CONTROL,
    // The method the client sent: an error page's internal redirect turns $request_method into GET.
    `map $request $slipway_method {`,
    `  '~^(\\S+) ' $1;`,
    `  default '';`,
    `}`,
    `proxy_http_version 1.1;`,
    ...PROXY_HEADERS,
    // Streaming responses and uploads pass as they come (a cached location turns buffering back on).
    `proxy_buffering off;`,
    `proxy_request_buffering off;`,
    `proxy_buffer_size 16k;`,
    `proxy_buffers 8 16k;`,
    `proxy_redirect off;`,
    `proxy_connect_timeout 5s;`,
    // WebSockets and event streams stay open while quiet.
    `proxy_read_timeout 1h;`,
    `proxy_send_timeout 1h;`,
    `gzip off;`,
    `ssl_protocols TLSv1.2 TLSv1.3;`,
    `ssl_session_cache shared:slipway_ssl:10m;`,
    `ssl_session_timeout 1h;`,
    '',
    ...(o.origin ? [`upstream slipway_origin {`, `  server ${address('origin', o.origin)};`, `  keepalive 16;`, `}`] : []),
    ...(o.fallback ? [`upstream slipway_fallback {`, `  server ${address('fallback', o.fallback)};`, `  keepalive 16;`, `}`] : []),
  ];
  table.hosts.forEach((h, i) => http.push(...hostHttp(h, i)));
  const plan = planBalance(table, dir);
  http.push(...balanceHttp(table, plan, o));
  http.push(...defaultServer(o, dir), ...statusServer(dir, o.generation), ...unknownServer(unknown, o, dir));
  table.hosts.forEach((h, i) => http.push(...server(h, i, o, dir, plan)));
  return [
    `# Written by Slipway from its edge table, generation ${o.generation}. Changes here are overwritten.`,
    `daemon on;`,
    ...(o.brotliModule ? [`load_module ${q(safe('module', o.brotliModule))};`] : []),
    ...(o.user ? [`user ${q(safe('user', o.user))};`] : []),
    `worker_processes ${workers};`,
    ...(o.openFiles ? [`worker_rlimit_nofile ${o.openFiles};`] : []),
    `worker_shutdown_timeout 300s;`,
    `pid ${q(`${dir}/nginx.pid`)};`,
    `error_log ${q(`${dir}/error.log`)} warn;`,
    `events {`,
    `  worker_connections ${connections};`,
    `}`,
    `http {`,
    indent(http),
    `}`,
    '',
  ].join('\n');
}

/** What a host needs at the http level: its IP restriction's lookup, its upstream. */
function hostHttp(h: EdgeHost, i: number): string[] {
  const out: string[] = [];
  const ipr = h.ipRestriction;
  if (ipr) {
    const blocked = ipr.type === 'allow' ? ['1', '0'] : ['0', '1'];
    out.push(`geo $slipway_blocked_${i} {`, `  default ${blocked[0]};`, ...ipr.ips.map((ip) => `  ${ipEntry(ip)} ${blocked[1]};`), `}`);
  }
  const t = h.target;
  if (t.type === 'upstream' && !h.maintenance) {
    const servers = t.servers.filter((s) => s.weight > 0);
    if (servers.length) {
      const even = servers.every((s) => s.weight === servers[0]!.weight);
      out.push(
        `upstream slipway_up_${i} {`,
        ...(even ? [`  least_conn;`] : []),
        ...servers.map(
          (s) => `  server ${address('upstream', s.address)}${even ? '' : ` weight=${Math.max(1, Math.round(s.weight))}`} max_fails=1 fail_timeout=5s;`,
        ),
        `  keepalive 32;`,
        `}`,
      );
    }
  }
  if (t.type === 'url' && !h.maintenance) out.push(...urlUpstream(`slipway_url_${i}`, t.url));
  return out;
}

function defaultServer(o: NginxOptions, dir: string): string[] {
  return [
    `server {`,
    `  listen ${listen(o.http)} default_server backlog=4096;`,
    ...(o.https ? [`  listen ${listen(o.https)} ssl http2 default_server backlog=4096;`, `  ssl_reject_handshake on;`] : []),
    `  server_name _;`,
    `  access_log off;`,
    // Declares the log format's variables when no host does (an empty table).
    `  set $slipway_kind ''; set $slipway_id ''; set $slipway_company '';`,
    `  ${acmeChallenge(dir)}`,
    ...(o.fallback
      ? [
          `  error_page 502 @slipway_502;`,
          `  location / { ${['proxy_pass http://slipway_fallback;', ...originHeaders(o)].join(' ')} }`,
          `  location @slipway_502 { ${PAGES.badGateway} }`,
        ]
      : [`  location / { ${PAGES.unknown} }`]),
    `}`,
  ];
}

/**
 * The names a wildcard would otherwise take that the registry answers as unknown (table.ts
 * `unknown`): 404 here, and no handshake on HTTPS. Written before the hosts' servers, so that its
 * expressions (preview names) are tried before the wildcards'.
 */
function unknownServer(unknown: NonNullable<EdgeTable['unknown']>, o: NginxOptions, dir: string): string[] {
  const names = [...unknown.hostnames, ...unknown.previewsOf.map(previewNames)];
  if (!names.length) return [];
  return [
    `server {`,
    `  listen ${listen(o.http)};`,
    ...(o.https ? [`  listen ${listen(o.https)} ssl http2;`, `  ssl_reject_handshake on;`] : []),
    `  server_name ${names.join(' ')};`,
    `  access_log off;`,
    `  ${acmeChallenge(dir)}`,
    `  location / { ${PAGES.unknown} }`,
    `}`,
  ];
}

function statusServer(dir: string, generation: number): string[] {
  if (!Number.isSafeInteger(generation) || generation < 0) throw new Error(`edge: invalid generation ${generation}`);
  return [
    `server {`,
    `  listen ${q(`unix:${dir}/status.sock`)};`,
    `  access_log off;`,
    `  location = /generation { default_type text/plain; return 200 '${generation}'; }`,
    `  location = /status { stub_status; }`,
    `  location / { return 404; }`,
    `}`,
  ];
}

function server(h: EdgeHost, i: number, o: NginxOptions, dir: string, plan: BalancePlan): string[] {
  const tls = h.tls && o.https ? h.tls : null;
  const lines: string[] = [`listen ${listen(o.http)};`, ...internalListen(plan, i, h)];
  if (o.https) {
    // A hostname without a certificate refuses the handshake here, rather than leave it to the
    // default server: a wildcard's server would otherwise answer a name under it with its own.
    lines.push(
      `listen ${listen(o.https)} ssl http2;`,
      ...(tls
        ? [`ssl_certificate ${q(safe('certificate file', tls.certFile))};`, `ssl_certificate_key ${q(safe('key file', tls.keyFile))};`]
        : [`ssl_reject_handshake on;`]),
    );
  }
  lines.push(
    `server_name ${serverName(h.hostname)};`,
    ...logOwner(h.owner),
    // ACME's HTTP-01 requests skip the checks below (the header comment says how).
    `if ($uri ~ ^/\\.well-known/acme-challenge/) { break; }`,
    acmeChallenge(dir),
  );
  if (tls && o.https && h.httpsRedirect) {
    const port = o.https.port === 443 ? '' : `:${o.https.port}`;
    lines.push(`if (${plainHttp(plan, i)}) { return 301 https://$host${port}$request_uri; }`);
  }
  if (h.ipRestriction) lines.push(`error_page 403 @slipway_403;`, `if ($slipway_blocked_${i}) { return 403; }`);
  // error_page is inherited only by levels that set none, so every server sets all of its own.
  lines.push(`error_page 502 @slipway_502;`, `error_page 504 @slipway_504;`);
  lines.push(...(h.maintenance ? maintenance(h.maintenance.html, dir) : target(h, h.target, i, o, plan)));
  lines.push(`location @slipway_403 { ${PAGES.forbidden} }`, `location @slipway_502 { ${PAGES.badGateway} }`, `location @slipway_504 { ${PAGES.timeout} }`);
  return [`server {`, indent(lines), `}`];
}

function maintenance(html: string, dir: string): string[] {
  return [
    `error_page 503 /__slipway_edge/maintenance.html;`,
    `location / { return 503; }`,
    `location = /__slipway_edge/maintenance.html {`,
    `  internal;`,
    `  alias ${q(`${dir}/${pageFile(html)}`)};`,
    `  default_type text/html;`,
    `  charset utf-8;`,
    `  etag off;`,
    `  add_header Retry-After ${RETRY_AFTER_SECONDS} always;`,
    `  add_header Cache-Control no-store always;`,
    `}`,
  ];
}

function target(h: EdgeHost, t: EdgeTarget, i: number, o: NginxOptions, plan: BalancePlan): string[] {
  if (t.type === 'static') return staticSite(t, !!o.brotliModule);
  if (t.type === 'balance') return plan.served.has(i) ? balanceLocation(h, i, plan, o) : target(h, { type: 'origin' }, i, o, plan);
  if (t.type === 'url') return [`location / {`, indent([...urlPass(`slipway_url_${i}`, t.url, o), ...cacheLines(h)]), `}`];
  if (t.type === 'upstream' ? !t.servers.some((s) => s.weight > 0) : !o.origin) return [`location / { return 502; }`];
  const pass = t.type === 'upstream' ? `slipway_up_${i}` : 'slipway_origin';
  return [`location / {`, indent([`proxy_pass http://${pass};`, ...(t.type === 'origin' ? originHeaders(o, originHost(plan, i)) : []), ...cacheLines(h)]), `}`];
}

/**
 * A proxying location's cache: nginx keeps what the response's Cache-Control (or Expires) lets a
 * shared cache keep (never private, no-store, no-cache, nor with Set-Cookie), for `seconds` when
 * set. Requests with credentials (and with `bypassOrigin`, with an Origin) go past it.
 */
function cacheLines(h: EdgeHost): string[] {
  if (!h.cache) return [];
  const bypass = h.cache.bypassOrigin ? '$http_authorization$http_origin' : '$http_authorization';
  return [
    `proxy_buffering on;`,
    `proxy_cache slipway_cache;`,
    // The generation is part of the key: a purge is a new generation, old entries age out.
    `proxy_cache_key 'g${Math.trunc(h.cache.generation)}|$scheme|$host|$request_uri';`,
    ...(h.cache.seconds > 0 ? [`proxy_cache_valid 200 301 404 ${Math.trunc(h.cache.seconds)}s;`] : []),
    `proxy_cache_bypass ${bypass};`,
    `proxy_no_cache ${bypass};`,
    `proxy_cache_lock on;`,
    // nginx's own answer replaces any the upstream gave (the API server's in-process cache says one too).
    `proxy_hide_header X-Cache;`,
    `add_header X-Cache $upstream_cache_status always;`,
  ];
}

/** serve.ts's rules: pretty URLs, directory redirects, the site's index file, the site's 404 page or the edge's, a fallback. */
function staticSite(t: Extract<EdgeTarget, { type: 'static' }>, brotli: boolean): string[] {
  const pretty = t.prettyUrls;
  const index = t.indexFile ?? 'index.html';
  if (!servableIndexFile(index)) throw new Error(`edge: index file ${JSON.stringify(index)} cannot be written into the nginx configuration`);
  const indexPattern = index.replace(/[.+]/g, '\\$&');
  const sitePage = (p: string) => `/${safe('page', p).replace(/^\/+/, '')}`;
  const out = [
    `root ${q(safe('static root', t.compressedRoot ?? t.root))};`,
    `charset utf-8;`,
    // A precompressed copy beside the file goes to clients that accept it; other files are gzipped on the fly.
    ...(brotli && t.compressedRoot ? [`brotli_static on;`] : []),
    `gzip on;`,
    `gzip_static on;`,
    `gzip_vary on;`,
    `gzip_comp_level 5;`,
    `gzip_min_length 256;`,
    `gzip_types ${GZIP_TYPES};`,
    `add_header Cache-Control $slipway_static_cc always;`,
    `error_page 405 @slipway_405;`,
    `if ($request_method !~ ^(GET|HEAD)$ ) { return 405; }`,
  ];
  if (t.fallback)
    out.push(
      `error_page 404 = /__slipway_edge/fallback;`,
      `location = /__slipway_edge/fallback { internal; try_files ${q(sitePage(t.fallback))} @slipway_404; }`,
    );
  else if (t.notFoundPage)
    out.push(
      `error_page 404 /__slipway_edge/not-found;`,
      `location = /__slipway_edge/not-found { internal; try_files ${q(sitePage(t.notFoundPage))} @slipway_404; }`,
    );
  else out.push(`error_page 404 @slipway_404;`);
  // The copies' own names (`/app.js.br`) are not the site's URLs: such names are looked up among the published files only.
  if (t.compressedRoot)
    out.push(
      `location ~ \\.(?:gz|br)$ { root ${q(safe('static root', t.root))}; gzip_static off; ${brotli ? 'brotli_static off; ' : ''}try_files $uri =404; }`,
    );
  if (pretty) {
    // `/about.html` → `/about`, `/docs/index.html` → `/docs/` (an index file ending in .html), when the file is there.
    if (index.endsWith('.html'))
      out.push(
        `location ~ ^(?<slipway_base>.*/)${indexPattern}$ { if (-f $request_filename) { return 301 $slipway_base$is_args$args; } try_files $uri @slipway_dir; }`,
      );
    out.push(
      `location ~ ^(?<slipway_base>.+)\\.html$ { if (-f $request_filename) { return 301 $slipway_base$is_args$args; } try_files $uri $uri.html @slipway_dir; }`,
    );
  }
  out.push(
    // A path ending in / serves its index file (never nginx's index module, which would redirect internally).
    `location ~ /$ { try_files \${uri}${index} =404; }`,
    `location / { try_files $uri${pretty ? ' $uri.html' : ''} @slipway_dir; }`,
    // A directory named without its slash: redirected when it has an index file.
    `location @slipway_dir { if (-f $request_filename/${index}) { return 301 $uri/$is_args$args; } return 404; }`,
    `location @slipway_404 { ${PAGES.missing} }`,
    `location @slipway_405 { ${PAGES.notAllowed} }`,
  );
  return out;
}
