// Forwarding one request to an upstream (an instance's port, or an external http(s) URL). When the
// connection fails before any response was sent, the caller learns it ('refused') and may try
// another upstream; the request body is then still unread only for methods without one, so retries
// are for idempotent methods (see `retryable`).
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';

export type ProxyOutcome = 'done' | 'refused';

/** Methods a refused request may be retried with on another upstream. */
export const retryable = (method: string | undefined) => ['GET', 'HEAD', 'OPTIONS'].includes(method ?? '');

const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer'];

export interface Upstream {
  /** http://127.0.0.1:PORT for an instance, or an external URL (its path prefixes the request's). */
  url: URL;
  /** The Host header sent upstream (default: the client's, for instances; the URL's host, for external URLs). */
  host?: string;
  /** The DNS lookup of the upstream's host (external URLs: one refusing private addresses, shared/net.ts guardedLookup). */
  lookup?: (hostname: string, options: any, cb: (...args: any[]) => void) => void;
}

export function proxy(req: IncomingMessage, res: ServerResponse, up: Upstream): Promise<ProxyOutcome> {
  return new Promise((resolve) => {
    const headers: Record<string, string | string[] | undefined> = { ...req.headers };
    for (const h of HOP_BY_HOP) delete headers[h];
    headers['x-forwarded-for'] = [req.headers['x-forwarded-for'], req.socket.remoteAddress].filter(Boolean).join(', ');
    headers['x-forwarded-host'] = req.headers.host ?? '';
    headers['x-forwarded-proto'] = 'http';
    if (up.host) headers.host = up.host;
    const https = up.url.protocol === 'https:';
    const base = up.url.pathname.replace(/\/$/, '');
    const r = (https ? httpsRequest : httpRequest)(
      {
        host: up.url.hostname.replace(/^\[|\]$/g, ''),
        port: up.url.port || (https ? 443 : 80),
        method: req.method,
        path: base + (req.url ?? '/'),
        headers,
        agent: false,
        lookup: up.lookup as never,
        servername: https ? up.url.hostname : undefined,
      },
      (upstream: IncomingMessage) => {
        const out = { ...upstream.headers };
        for (const h of HOP_BY_HOP) if (h !== 'transfer-encoding') delete out[h];
        res.writeHead(upstream.statusCode ?? 502, out);
        upstream.pipe(res);
        upstream.on('end', () => resolve('done'));
        upstream.on('error', () => {
          res.destroy();
          resolve('done');
        });
        res.on('close', () => resolve('done'));
      },
    );
    r.on('error', () => {
      if (res.headersSent) {
        res.destroy();
        return resolve('done');
      }
      // Nothing came back: the upstream refused, reset or could not be found.
      resolve('refused');
    });
    req.pipe(r);
  });
}
