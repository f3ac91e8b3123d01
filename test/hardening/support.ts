// Raw-socket helpers of the hardening suites: inputs fetch cannot send (bad percent-encoding, broken
// framing, over-long request lines, bodies that never arrive) and the parsed raw responses.
import net from 'node:net';
import assert from 'node:assert/strict';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: any;
  text: string;
  /** Milliseconds from connecting until the server closed the connection (or the wait ended). */
  elapsedMs: number;
  closed: boolean;
}

export const portOf = (baseUrl: string) => Number(new URL(baseUrl).port);

/** Sends `data` (all at once) on a new connection and collects what comes back until the server closes or `waitMs` passes. */
export function rawRequest(port: number, data: string | Buffer, waitMs = 3000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1', () => socket.write(data));
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      try {
        resolve({ ...parse(Buffer.concat(chunks).toString('utf8')), elapsedMs: Date.now() - started, closed });
      } catch (e) {
        reject(e);
      }
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (d) => chunks.push(d));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
  });
}

function parse(text: string): Omit<RawResponse, 'elapsedMs' | 'closed'> {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: {}, body: undefined, text };
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const bodyText = text.slice(end + 4);
  let body: unknown;
  try {
    body = bodyText ? JSON.parse(bodyText) : undefined;
  } catch {
    body = bodyText;
  }
  return { status, headers, body, text };
}

/** The contract's error body `{message, status, data?}` with a JSON content type. */
export function assertRawErrorBody(r: RawResponse, status: number): void {
  assert.equal(r.status, status, `expected ${status}: ${r.text.slice(0, 500)}`);
  assert.match(r.headers['content-type'] ?? '', /^application\/json/, 'content-type is JSON');
  assert.ok(r.body && typeof r.body === 'object', `JSON object body: ${r.text.slice(0, 500)}`);
  for (const k of Object.keys(r.body)) assert.ok(['message', 'status', 'data'].includes(k), `unexpected property ${k}: ${r.text.slice(0, 500)}`);
  assert.equal(typeof r.body.message, 'string');
  assert.ok(r.body.message.length > 0);
  assert.equal(r.body.status, status);
}

/** A request head (HTTP/1.1, Connection: close) with the given extra header lines. */
export const head = (method: string, target: string, headers: Record<string, string> = {}) =>
  `${method} ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
