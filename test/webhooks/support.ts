// Helpers of the webhook suites: a real HTTP receiver on 127.0.0.1, signature verification as a
// receiver does it (docs/webhooks.md), and emitting events without going through a resource module.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestServer } from '../helpers/server.js';
import type { EventType } from '../../src/shared/events.js';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
  at: number;
}

/** What the receiver answers; `hang` never answers; `redirect` answers 302 to `location`. */
export type Behavior =
  { status: number; body?: string } | { hang: true } | { redirect: string } | ((r: Received, n: number) => { status: number; body?: string });

export class Receiver {
  readonly received: Received[] = [];
  /** Requests answered with a 2xx status. */
  readonly acked: Received[] = [];
  behavior: Behavior = { status: 200, body: 'ok' };
  private server: Server;
  private hanging: ServerResponse[] = [];
  url = '';

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        const r: Received = { headers: req.headers, body, json, at: Date.now() };
        this.received.push(r);
        const b = typeof this.behavior === 'function' ? this.behavior(r, this.received.length) : this.behavior;
        if ('hang' in b) {
          this.hanging.push(res);
          return;
        }
        if ('redirect' in b) {
          res.writeHead(302, { location: b.redirect });
          return res.end();
        }
        if (b.status >= 200 && b.status < 300) this.acked.push(r);
        res.writeHead(b.status, { 'content-type': 'text/plain' });
        res.end(b.body ?? '');
      });
    });
    this.server.keepAliveTimeout = 1000;
  }

  async start(path = '/hook'): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
    return this;
  }

  for(webhookId: string) {
    return this.received.filter((r) => r.json?.webhook_id === webhookId);
  }

  /** Drops the requests held by `hang` (their senders see the connection close). */
  dropHanging() {
    for (const h of this.hanging.splice(0)) h.destroy();
  }

  async close() {
    this.dropHanging();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** Standard Webhooks verification, as documented in docs/webhooks.md. */
export function verify(secret: string, headers: IncomingHttpHeaders, body: string, toleranceSec = 300): boolean {
  const id = String(headers['webhook-id'] ?? '');
  const ts = String(headers['webhook-timestamp'] ?? '');
  const sigs = String(headers['webhook-signature'] ?? '').split(' ');
  if (!id || !/^\d+$/.test(ts) || Math.abs(Date.now() / 1000 - Number(ts)) > toleranceSec) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest();
  return sigs.some((s) => {
    const [v, b64] = s.split(',');
    if (v !== 'v1' || !b64) return false;
    const got = Buffer.from(b64, 'base64');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}

/** Emits an event directly (in its own transaction), as a module would inside its change. */
export async function emitNow(s: TestServer, type: EventType, data: Record<string, unknown>, companyId = s.companyId) {
  const e = await s.app.database.db.transaction().execute((tx) => s.app.events.record(tx, type, companyId, data));
  s.app.jobs.wake();
  return e;
}

export const ALL_EVENTS: EventType[] = ['APP_CREATE', 'APP_UPDATE', 'APP_DELETE', 'APP_DEPLOY'];
