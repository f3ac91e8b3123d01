// The edge's nginx data plane against a real nginx: a test edge (its own directory, free ports, an
// access log tailer, a generation per apply), small upstream apps, and requests with a Host header.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type RequestListener, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import { AccessLogTailer, type AccessLogOptions } from '../../src/shared/edge/nginx/access-log.js';
import { nginxFiles, renderNginx, type Listen } from '../../src/shared/edge/nginx/config.js';
import { brotliStaticModule, nginxBinary, NginxProcess } from '../../src/shared/edge/nginx/process.js';
import type { Served } from '../../src/shared/edge/index.js';
import type { EdgeHost, EdgeTable, EdgeTarget } from '../../src/shared/edge/table.js';

/** The describe() skip option: a reason when nginx is missing, unless SLIPWAY_REQUIRE_NGINX=1 (then the tests run and fail). */
export function nginxSkip(): string | false {
  if (nginxBinary() || process.env.SLIPWAY_REQUIRE_NGINX === '1') return false;
  return 'nginx is not installed (scripts/install-edge.sh; SLIPWAY_REQUIRE_NGINX=1 makes this a failure)';
}

/** nginx's server block for `serverName` in the configuration at `path` ('' when there is none yet). */
export function serverBlock(path: string, serverName: string): string {
  let conf: string;
  try {
    conf = readFileSync(path, 'utf8');
  } catch {
    return '';
  }
  const at = conf.indexOf(`server_name ${serverName};`);
  return at < 0 ? '' : conf.slice(at, conf.indexOf('\nserver {', at) >>> 0);
}

/** The first file named `name` under `dir` (throws when there is none). */
export function findFile(dir: string, name: string): string {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isFile() && e.name === name) return p;
    if (e.isDirectory()) {
      try {
        return findFile(p, name);
      } catch {
        /* not there */
      }
    }
  }
  throw new Error(`no ${name} under ${dir}`);
}

/** The regular expression nginx.conf names a wildcard's server with. */
export const wildcardName = (base: string) => `~^[^.]+\\.${base.replace(/\./g, '\\.')}$`;

/** A TLS handshake with `servername` at 127.0.0.1:port: whether the certificate chains to `ca`, and its names. */
export function handshake(port: number, servername: string, ca: Buffer): Promise<{ authorized: boolean; san: string }> {
  return new Promise((resolve, reject) => {
    const socket: TLSSocket = connect({ host: '127.0.0.1', port, servername, ca }, () => {
      const out = { authorized: socket.authorized, san: socket.getPeerCertificate().subjectaltname ?? '' };
      socket.end();
      resolve(out);
    });
    socket.once('error', reject);
  });
}

export const quietLog = { info: () => {}, warn: () => {} };

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export function host(hostname: string, target: EdgeTarget, extra: Partial<EdgeHost> = {}): EdgeHost {
  return {
    hostname,
    owner: { kind: 'applications', id: `id-${hostname}`, companyId: 'company-1' },
    target,
    ipRestriction: null,
    maintenance: null,
    cache: null,
    tls: null,
    httpsRedirect: false,
    ...extra,
  };
}

export const upstream = (...ports: number[]): EdgeTarget => ({ type: 'upstream', servers: ports.map((p) => ({ address: `127.0.0.1:${p}`, weight: 1 })) });

export interface EdgeOptions {
  https?: boolean;
  trustedProxies?: string[];
  origin?: string;
  /** The geo headers nginx believes (GEO load balancers). */
  geoHeaders?: { country: string | null; coordinates: string | null };
  /** The access log tailer's options (rotateBytes, say). */
  accessLog?: Partial<AccessLogOptions>;
}

/** Slipway's side of one edge under test: renders tables and applies them to its own nginx. */
export class TestEdge {
  generation = 0;
  private constructor(
    readonly dir: string,
    readonly nginx: NginxProcess,
    readonly http: Listen,
    readonly https: Listen | null,
    public receiver: AccessLogTailer,
    /** Access log lines received so far. */
    readonly served: Served[],
    private o: EdgeOptions,
  ) {}

  static async create(o: EdgeOptions = {}): Promise<TestEdge> {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-edge-nginx-'));
    const served: Served[] = [];
    const nginx = new NginxProcess(dir, quietLog);
    const receiver = TestEdge.tailer(dir, nginx, served, o);
    await receiver.start();
    const http = { host: '127.0.0.1', port: await freePort() };
    const https = o.https ? { host: '127.0.0.1', port: await freePort() } : null;
    return new TestEdge(dir, nginx, http, https, receiver, served, o);
  }

  private static tailer(dir: string, nginx: NginxProcess, served: Served[], o: EdgeOptions): AccessLogTailer {
    return new AccessLogTailer((b) => void served.push(...b), {
      path: join(dir, 'access.log'),
      pollMs: 50,
      reopen: () => nginx.reopenLogs(),
      ...o.accessLog,
    });
  }

  /** A new tailer of the same file (after the last one stopped: a restarted Slipway), started. */
  async restartAccessLog(): Promise<void> {
    this.receiver = TestEdge.tailer(this.dir, this.nginx, this.served, this.o);
    await this.receiver.start();
  }

  render(hosts: EdgeHost[], generation = this.generation + 1, unknown?: EdgeTable['unknown']): string {
    return renderNginx(
      { hosts, unknown },
      {
        dir: this.dir,
        http: this.http,
        https: this.https,
        origin: this.o.origin ?? '',
        trustedProxies: this.o.trustedProxies ?? [],
        geoHeaders: this.o.geoHeaders,
        // As the driver: as root, the workers run as this user (the load balancers' internal sockets are its alone).
        user: process.getuid?.() === 0 ? userInfo().username : undefined,
        accessLog: this.receiver.path,
        brotliModule: brotliStaticModule(),
        generation,
      },
    );
  }

  /** Applies a table: its hosts and (wildcards) the names it holds unknown. */
  async apply(hosts: EdgeHost[], unknown?: EdgeTable['unknown']): Promise<void> {
    const generation = this.generation + 1;
    await this.nginx.apply(this.render(hosts, generation, unknown), generation, nginxFiles({ hosts }));
    this.generation = generation;
  }

  async stop(): Promise<void> {
    await this.nginx.stop();
    await this.receiver.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  raw: Buffer;
}

export interface Ask {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  /** The address the request comes from (another loopback address: 127.0.0.2). */
  localAddress?: string;
  body?: string;
}

/** One request to the edge's HTTP port with `Host: hostname`, on a connection of its own. */
export function ask(port: number, hostname: string, a: Ask = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: a.method ?? 'GET',
        path: a.path ?? '/',
        headers: { host: hostname, ...a.headers },
        localAddress: a.localAddress,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw.toString('utf8'), raw });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(a.body);
  });
}

/** A small app instance: answers JSON naming itself and what it was sent. */
export async function startApp(name: string, handler?: RequestListener): Promise<{ port: number; server: Server; close: () => Promise<void> }> {
  const server = createServer(
    handler ??
      ((req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            name,
            path: req.url,
            host: req.headers.host,
            xff: req.headers['x-forwarded-for'] ?? null,
            realIp: req.headers['x-real-ip'] ?? null,
            proto: req.headers['x-forwarded-proto'] ?? null,
          }),
        );
      }),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
