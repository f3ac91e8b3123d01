// nginx's access log, received: every answered request arrives as one syslog datagram over UDP on
// 127.0.0.1 (`access_log syslog:server=…` in config.ts, a JSON line after the syslog header), and
// is handed on in batches, so nothing is written per request.
import { createSocket, type Socket } from 'node:dgram';
import type { Served } from '../index.js';

export interface AccessLogOptions {
  /** Address to bind (default 127.0.0.1: nginx runs on the same host). */
  host?: string;
  /** Port (default 0: any free port; `address` tells which). */
  port?: number;
  /** A batch is handed on when it holds this many lines (default 500)… */
  maxBatch?: number;
  /** …or when its oldest line is this old (default 1000 ms). */
  flushMs?: number;
  /** Lines kept while the callback is slow; beyond it the oldest are dropped (default 100,000). */
  maxPending?: number;
  log?: { warn(obj: object, msg: string): void };
}

/** One syslog datagram of config.ts's log format as a `Served`, or null when it is not one. */
export function parseAccessLine(datagram: string): Served | null {
  const start = datagram.indexOf('{');
  if (!datagram.startsWith('<') || start < 0) return null;
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(datagram.slice(start).trimEnd());
  } catch {
    return null;
  }
  const str = (k: string) => (typeof j[k] === 'string' ? (j[k] as string) : '');
  const num = (k: string) => (typeof j[k] === 'number' && Number.isFinite(j[k]) ? (j[k] as number) : 0);
  if (!str('kind') || !str('id') || !num('status')) return null;
  return {
    owner: { kind: str('kind'), id: str('id'), companyId: str('company') },
    method: str('method') || 'GET',
    path: str('path') || '/',
    status: num('status'),
    bytes: num('bytes'),
    durationMs: num('time') * 1000,
    clientIp: str('client'),
    host: str('host'),
    userAgent: str('ua'),
    referer: str('referer'),
    cached: str('cache') === 'HIT',
    country: null,
    at: num('at') ? new Date(num('at') * 1000) : new Date(),
  };
}

export class AccessLogReceiver {
  private socket: Socket | null = null;
  private pending: Served[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  /** Datagrams that were not access log lines, and lines dropped while the callback lagged. */
  readonly counts = { received: 0, unreadable: 0, dropped: 0 };
  /** host:port the receiver listens on (for config.ts's `accessLog`), once started. */
  address = '';

  constructor(
    private onBatch: (batch: Served[]) => void | Promise<void>,
    private o: AccessLogOptions = {},
  ) {}

  async start(): Promise<string> {
    const socket = createSocket('udp4');
    socket.on('message', (msg) => this.receive(msg.toString('utf8')));
    socket.on('error', (e) => this.o.log?.warn({ err: e.message }, 'edge: access log receiver error'));
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(this.o.port ?? 0, this.o.host ?? '127.0.0.1', () => {
        socket.off('error', reject);
        resolve();
      });
    });
    // nginx sends faster than a busy event loop may read: a larger receive buffer loses fewer lines.
    try {
      socket.setRecvBufferSize(4 * 1024 * 1024);
    } catch {
      // the system's limit stays
    }
    this.socket = socket;
    const a = socket.address();
    this.address = `${a.address}:${a.port}`;
    return this.address;
  }

  private receive(datagram: string) {
    this.counts.received++;
    const served = parseAccessLine(datagram);
    if (!served) return void this.counts.unreadable++;
    this.pending.push(served);
    const max = this.o.maxPending ?? 100_000;
    if (this.pending.length > max) this.counts.dropped += this.pending.splice(0, this.pending.length - max).length;
    // A full batch goes now; one under way takes the rest when it ends.
    if (this.pending.length >= (this.o.maxBatch ?? 500)) {
      if (!this.flushing) void this.flush();
    } else this.timer ??= setTimeout(() => void this.flush(), this.o.flushMs ?? 1000);
  }

  /** Hands on what has arrived (one batch at a time; waits for one under way). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.flushing) await this.flushing;
    if (!this.pending.length) return;
    const batch = this.pending.splice(0, this.o.maxBatch ?? 500);
    this.flushing = (async () => {
      try {
        await this.onBatch(batch);
      } catch (e) {
        this.o.log?.warn({ err: (e as Error).message, lines: batch.length }, 'edge: access log batch failed');
      } finally {
        this.flushing = null;
      }
    })();
    await this.flushing;
    if (this.pending.length) {
      if (this.pending.length >= (this.o.maxBatch ?? 500)) return this.flush();
      this.timer ??= setTimeout(() => void this.flush(), this.o.flushMs ?? 1000);
    }
  }

  /** Stops receiving and hands on what is left. */
  async stop(): Promise<void> {
    const socket = this.socket;
    this.socket = null;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
    while (this.pending.length || this.flushing) await this.flush();
  }
}
