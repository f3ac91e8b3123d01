// Load generation and the few statistics the scenarios share.
import autocannon from 'autocannon';
import { line, ms } from './report.js';

/** Seconds of each measured autocannon run, its connections, and the paired rounds of a read. */
export const seconds = Number(process.env.BENCH_SECONDS ?? 5);
export const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
export const rounds = Number(process.env.BENCH_READ_ROUNDS ?? 3);

export interface Load {
  /** 2xx answers per second. */
  rps: number;
  p50: number;
  p99: number;
  /** Answers not 2xx, and errors. */
  failed: number;
}

export interface LoadOptions {
  url: string;
  headers?: Record<string, string>;
  duration?: number;
  /** Connections (default BENCH_CONNECTIONS). */
  connections?: number;
  /** autocannon's request list (a body made per request). */
  requests?: autocannon.Request[];
  /** Printed with the figures when given; a warm-up has none. */
  title?: string;
}

/**
 * An autocannon run, with the 2xx answers' p50 and p99 to the microsecond: autocannon's own
 * percentiles are whole milliseconds (its histogram counts integers), too coarse to compare p99s
 * of 2 or 3 ms, where one step is 1.5x. Its `response` events carry each latency unrounded.
 */
export async function load(o: LoadOptions): Promise<Load> {
  const latencies: number[] = [];
  const duration = o.duration ?? seconds;
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon({ url: o.url, headers: o.headers, requests: o.requests, connections: o.connections ?? connections, duration }, (e, result) =>
      e ? reject(e) : resolve(result),
    );
    // After a connection was closed by the server (nginx's keepalive_requests), autocannon reconnects
    // but keeps the request it had written on the closed one first in its queue: every later duration
    // of that client starts a request early. From a client's first reconnect on, its latency is the
    // time since its previous answer instead (the same span while nothing is lost: it writes the next
    // request right after an answer).
    const clients = new Map<object, { conn: unknown; at: number; reconnected: boolean }>();
    run.on('response', (client, status, _bytes, ms) => {
      const at = performance.now();
      const conn = (client as unknown as { conn: unknown }).conn;
      const c = clients.get(client);
      let latency = ms;
      if (!c) clients.set(client, { conn, at, reconnected: false });
      else {
        if (c.conn !== conn) Object.assign(c, { conn, reconnected: true });
        if (c.reconnected) latency = at - c.at;
        c.at = at;
      }
      if (status >= 200 && status < 300) latencies.push(latency);
    });
  });
  latencies.sort((a, b) => a - b);
  const out = { rps: latencies.length / duration, p50: percentile(latencies, 50), p99: percentile(latencies, 99), failed: r.non2xx + r.errors };
  if (o.title) printLoad(o.title, out, 'req/s');
  return out;
}

/** A measurement's line: its rate, p99 and p50, and any failures. */
export function printLoad(title: string, l: Load, unit: string) {
  line(title, `${l.rps.toFixed(0).padStart(7)} ${unit.padEnd(11)} p99 ${ms(l.p99)}   p50 ${ms(l.p50)}${l.failed ? `   (${l.failed} failed!)` : ''}`);
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
export async function pool<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

export const range = (n: number) => Array.from({ length: n }, (_, i) => i);
export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
