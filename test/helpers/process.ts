// Starts `slipway serve` as a child process (for multi-process, crash and CLI tests) and waits
// for its start banner.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { RATE_ENV_NAMES, type RateLimitConfig } from '../../src/shared/config.js';
import { edgeEnv } from './server.js';

export const BIN = fileURLToPath(new URL('../../bin/slipway.mjs', import.meta.url));

/** The environment that sets a child's rate limits: `rateEnv(GENEROUS)` makes every tier generous. */
export function rateEnv(limits: Partial<RateLimitConfig>): Record<string, string> {
  return Object.fromEntries(Object.entries(limits).map(([tier, n]) => [RATE_ENV_NAMES[tier as keyof RateLimitConfig], String(n)]));
}

export interface ChildServer {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * `keepOutput: false` stops collecting the output once the server has started (a benchmark's
 * request log). `bin`: another build's `bin/slipway.mjs`.
 */
export function startChild(args: string[], env: Record<string, string>, timeoutMs = 30_000, keepOutput = true, bin = BIN): Promise<ChildServer> {
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--log-level', 'warn', ...args], {
    // The edge's nginx and the applications' containers stop with the child (unless the child is
    // killed: then the test stops them).
    env: { ...process.env, SLIPWAY_EDGE_STOP_ON_EXIT: '1', SLIPWAY_APPS_STOP_ON_EXIT: '1', ...edgeEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in time:\n${out}`)), timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /serving the Hosting Platform API v3 at (\S+)\/v3/.exec(out);
      if (m) {
        clearTimeout(timer);
        if (!keepOutput) {
          child.stdout!.off('data', onData).resume();
          child.stderr!.off('data', onData).resume();
        }
        resolve({
          child,
          baseUrl: m[1]!,
          output: () => out,
          async stop(signal = 'SIGTERM') {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal);
            await exited;
          },
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before starting:\n${out}`));
    });
  });
}

export async function call(baseUrl: string, method: string, path: string, token: string | null, body?: unknown) {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${baseUrl}/v3${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** `call` that asserts the status (printing method, path and body when it differs); returns the body. */
export async function ok(baseUrl: string, token: string | null, method: string, path: string, expected: number, body?: unknown) {
  const r = await call(baseUrl, method, path, token, body);
  assert.equal(r.status, expected, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}
