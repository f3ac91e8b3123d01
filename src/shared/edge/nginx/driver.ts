// The `nginx` edge driver: nginx (its own process, started and reloaded from here) serves the public
// port, and the in-process edge runs behind it on the loopback interface as the *origin* of what
// nginx cannot serve alone (waking a hibernated application, which needs the control plane; a load
// balancer's GEO choice by coordinates, computed per request). Slipway is the control plane: it
// renders the table of every routed hostname (each kind's `describe`; wildcard domains, and the
// names the registry holds unknown under them; the held names a kind serves here all the same,
// `claimed`: buckets' CDN hostnames) into a configuration and applies it when something
// changed (`changed()`, debounced) and every 30 s as a safety net, only when the rendered text
// differs. nginx outlives Slipway: a new Slipway adopts the running master, which kept serving the
// last configuration meanwhile.
//
// Access logs: nginx logs every request it answers under a hostname of the table (config.ts) to a
// buffered file in its directory, which the AccessLogTailer reads in batches for the edge's
// listeners (traffic records, hibernation); what nginx logs while Slipway is down is read at the next start.
// So that nothing is counted twice the origin listens twice: requests nginx logged come to `origin`
// (only a load balancer's destinations are reported there), those of its default server to
// `fallback` (reported as the in-process edge always does).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer, isIP } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import type { Database } from '../../db/index.js';
import { Edge, type RoutedHost } from '../index.js';
import { edgeCertificates, withCertificates, type Certificates } from '../certificates.js';
import { buildTable, isWildcard, type EdgeTable } from '../table.js';
import { AccessLogTailer } from './access-log.js';
import { acmeChallengeDir, nameable, nginxFiles, renderNginx, type NginxOptions } from './config.js';
import { ORIGIN_SECRET_HEADER } from './syntax.js';
import { brotliStaticModule, NginxProcess } from './process.js';

/** How long changes gather before one apply. */
const DEBOUNCE_MS = 50;
/** The periodic resync (instances that moved, anything a change did not announce). */
const RESYNC_MS = 30_000;
/** How soon an apply that failed is tried again. */
const RETRY_MS = 1_000;

/** nginx's directory under the data directory (short: the status socket's path must stay under 108 bytes). */
export const nginxDir = (dataDir: string) => join(dataDir, 'edge', 'nginx');

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * The origin secret: kept in nginx's directory (0600) and reused, so that a running nginx a new
 * Slipway adopts is believed before its configuration is rewritten; made when missing.
 */
function originSecret(dir: string): string {
  const path = join(dir, 'origin.secret');
  try {
    const kept = readFileSync(path, 'utf8').trim();
    if (/^[0-9a-f]{64}$/.test(kept)) return kept;
  } catch {
    // none yet
  }
  mkdirSync(dir, { recursive: true });
  const made = randomBytes(32).toString('hex');
  writeFileSync(`${path}.tmp`, made, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
  return made;
}

export class NginxEdge extends Edge {
  override readonly driver = 'nginx' as const;
  readonly nginx: NginxProcess;
  private accessLog: AccessLogTailer;
  private options: Omit<NginxOptions, 'generation'> | null = null;
  /** The configuration last applied, rendered with generation 0 (to tell whether anything changed). */
  private applied = '';
  private generation = 0;
  private next: Promise<void> | null = null;
  private running: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** What nginx sends the origin to be believed (fromProxy); set at start. */
  private originSecret = '';
  /** The certificates of HTTPS (SLIPWAY_EDGE_HTTPS_PORT), or null when it is off. */
  private certificates: Certificates | null;
  /** The HTTPS port nginx listens on, or null. */
  httpsPort: number | null = null;

  constructor(config: Config, log: FastifyBaseLogger, database: Database, bin: string) {
    super(config, log, database);
    this.nginx = new NginxProcess(nginxDir(config.dataDir), log, bin);
    this.accessLog = new AccessLogTailer((batch) => batch.forEach((s) => this.served(s)), {
      path: join(this.nginx.dir, 'access.log'),
      reopen: () => this.nginx.reopenLogs(),
      log,
    });
    // ACME (HTTP-01): nginx answers from files in its directory; a certificate that lands is applied at once.
    this.certificates = edgeCertificates(this.settings, config.dataDir, log, {
      challengeDir: acmeChallengeDir(this.nginx.dir),
      issued: () => void this.changed(),
    });
  }

  /**
   * A request nginx sent carries the origin secret (config.ts sends it to the origin and the
   * fallback only). Anything else on this machine can connect to the origin's loopback port too —
   * a hosted application, or one made to fetch a URL for somebody (SSRF) — and send any X-Real-IP:
   * without the secret it is a direct client, its address the socket's, and the origin logs it.
   * The header is removed here, so the origin never passes it on (to a hibernated app, say).
   * (A secret rather than a Unix socket: the same token also keeps working for a TCP origin on
   * another host later, and a test can tell it apart. Either is readable by processes of Slipway's
   * own user, which hosted applications run as: the secret's file and nginx.conf are 0600.)
   */
  protected override fromProxy(req: IncomingMessage): boolean {
    const sent = req.headers[ORIGIN_SECRET_HEADER];
    delete req.headers[ORIGIN_SECRET_HEADER];
    if (typeof sent !== 'string' || sent.length !== this.originSecret.length) return false;
    return timingSafeEqual(Buffer.from(sent), Buffer.from(this.originSecret));
  }

  /** Behind nginx (a request `fromProxy`) its X-Real-IP is the client (after its own trusted-proxy rules); else the socket's address. */
  protected override clientIp(req: IncomingMessage, proxied: boolean): string {
    const real = proxied ? String(req.headers['x-real-ip'] ?? '') : '';
    return isIP(real) ? real : (req.socket.remoteAddress ?? '');
  }

  override async start(): Promise<void> {
    this.originSecret = originSecret(this.nginx.dir);
    const origin = await this.listen(0, '127.0.0.1', true);
    const fallback = await this.listen(0, '127.0.0.1', false);
    this.traffic.start();
    mkdirSync(this.nginx.dir, { recursive: true });
    const accessLog = await this.accessLog.start();
    const adopted = await this.nginx.adopt();
    const host = this.settings.host;
    // Port 0 (tests): the port of the adopted nginx, so that it keeps its clients; else a free one.
    const port = this.settings.port || (adopted && this.previousPort()) || (await freePort(host));
    this.port = port;
    const https = this.settings.httpsPort;
    if (https !== null) this.httpsPort = https || (adopted && this.previousPort(true)) || (await freePort(host));
    this.generation = (adopted && (await this.nginx.generation())) || 0;
    this.options = {
      dir: this.nginx.dir,
      http: { host, port },
      https: this.httpsPort === null ? null : { host, port: this.httpsPort },
      origin: `127.0.0.1:${origin}`,
      fallback: `127.0.0.1:${fallback}`,
      trustedProxies: this.settings.trustedProxies,
      geoHeaders: { country: this.settings.countryHeader, coordinates: this.settings.geoHeader },
      originSecret: this.originSecret,
      accessLog,
      brotliModule: brotliStaticModule(),
      // Started as root, nginx's workers would be `nobody`, who cannot read the data directory (the
      // releases, the pages): they run as Slipway's own user instead.
      user: process.getuid?.() === 0 ? userInfo().username : undefined,
    };
    await this.sync();
    this.timer = setInterval(() => void this.changed(), RESYNC_MS);
    this.timer.unref();
  }

  /** The public (or HTTPS) port in the configuration a previous Slipway left (the default server's listen line). */
  private previousPort(https = false): number {
    try {
      const m = (https ? / (\S+):(\d+) ssl http2 default_server/ : / (\S+):(\d+) default_server/).exec(readFileSync(this.nginx.confPath, 'utf8'));
      return m ? Number(m[2]) : 0;
    } catch {
      return 0;
    }
  }

  /** Applies the current table; calls made meanwhile share the next apply, which starts after this one. */
  override changed(): Promise<void> {
    if (this.next) return this.next;
    const run = this.running.then(async () => {
      await new Promise((r) => setTimeout(r, DEBOUNCE_MS));
      this.next = null;
      await this.sync().catch((e: Error) => {
        this.log.warn({ err: e.message }, 'edge: the nginx configuration could not be applied; trying again in a second');
        // Not left to the periodic resync: a removed hostname would stay served for up to 30 s.
        setTimeout(() => void this.changed(), RETRY_MS).unref();
      });
    });
    this.next = run;
    this.running = run;
    return run;
  }

  /**
   * The routed hostnames and, after them, the preview names of their services (`<label>--<hostname>`,
   * as the registry's routeOf derives them): a hostname recorded as such comes first and stays its
   * owner's (buildTable keeps the first entry of a name).
   */
  private async withPreviews(routed: RoutedHost[]): Promise<RoutedHost[]> {
    const labels = new Map<string, Promise<string[]>>();
    const previews: RoutedHost[] = [];
    for (const r of routed) {
      const kind = this.services.find((s) => s.kind === r.kind);
      // A wildcard has no preview names: `<label>--x.example.com` is the wildcard's own (the registry's routeOf).
      if (!kind?.previews || r.preview || isWildcard(r.hostname)) continue;
      let l = labels.get(r.id);
      if (!l) labels.set(r.id, (l = kind.previews(r.id).catch(() => [])));
      for (const label of await l) previews.push({ ...r, hostname: `${label}--${r.hostname}`, preview: label });
    }
    return [...routed, ...previews];
  }

  /** The table nginx serves (tests and the admin may look). */
  async table(): Promise<EdgeTable> {
    const [routed, held] = await Promise.all([this.routed().then((r) => this.withPreviews(r)), this.held()]);
    // Held names a kind serves at the proxy (a bucket's CDN hostname): only names the registry records.
    const recorded = new Set(held);
    const claimed = (
      await Promise.all(
        this.services.map((s) =>
          (s.claimed?.(held) ?? Promise.resolve([])).catch((e: Error) => {
            this.log.warn({ err: e.message, kind: s.kind }, 'edge: the hostnames a kind serves could not be listed');
            return [];
          }),
        ),
      )
    )
      .flat()
      .filter((c) => recorded.has(c.hostname));
    const served = new Set(claimed.map((c) => c.hostname));
    const table = await buildTable(
      [...routed, ...claimed],
      async (r) => (await this.services.find((s) => s.kind === r.kind)?.describe?.(r.id, r.preview)) ?? null,
      nameable,
      (r, e) => this.log.warn({ err: e.message, kind: r.kind, id: r.id }, 'edge: a service could not be described; the origin serves it'),
      held.filter((h) => !served.has(h)),
    );
    // HTTPS: every hostname of the table gets its certificate (issued here when missing or due).
    return this.certificates ? withCertificates(table, this.certificates, this.settings.httpsRedirect) : table;
  }

  private async sync(): Promise<void> {
    if (!this.options || this.stopped) return;
    const table = await this.table();
    const o = this.options;
    if (renderNginx(table, { ...o, generation: 0 }) === this.applied && this.nginx.masterPid()) return;
    const generation = this.generation + 1;
    await this.nginx.apply(renderNginx(table, { ...o, generation }), generation, nginxFiles(table));
    this.generation = generation;
    this.applied = renderNginx(table, { ...o, generation: 0 });
  }

  override async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
    // nginx is the data plane: it keeps serving while Slipway is down, unless told otherwise (tests).
    if (this.settings.stopOnExit) await this.nginx.stop();
    await this.accessLog.stop();
    await super.stop();
  }
}
