// The interface of a real database engine: what the databases module's job steps ask a server to
// do. Every method is idempotent (a step re-run after a crash finds what the crashed run did and
// finishes it) and runs outside any transaction of the control plane's database. A method throws
// `Refused` when the server definitively refused (the operation fails: error, passwordChangeFailed,
// restoringFailed ...); any other error is taken as transient and the job is retried.
import { spawn } from 'node:child_process';
import { accessSync, constants, createReadStream, createWriteStream } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { EngineFamily } from './settings.js';

/** A database as the engine sees it. */
export interface Target {
  /** The Slipway database id. */
  id: string;
  /** The server-side database name (PostgreSQL, MySQL); unused by Redis. */
  database: string;
  user: string;
  password: string;
  suspended: boolean;
  /** PostgreSQL extensions to create where the server has them. */
  extensions: string[];
  /** Redis: the port of the database's own server and Slipway's admin password on it. */
  port?: number;
  adminPassword?: string;
  /** Who may connect: see `Access`. */
  access: Access;
}

/**
 * Who may connect to a database: internal clients always; with `external`, others too, limited by
 * the IP restriction when one is enabled (`mode` and its addresses or CIDR ranges).
 */
export interface Access {
  external: boolean;
  restriction: { mode: 'allow' | 'deny'; entries: string[] } | null;
}

export class Refused extends Error {}

export interface Usage {
  /** Bytes of storage in use. */
  storage: number;
  /** Bytes of memory in use, when the engine can tell it per database. */
  memory: number | null;
}

export interface DatabaseEngine {
  readonly family: EngineFamily;
  /** One line for the start banner: where it is served, which dump tools are missing. */
  describe(): string;
  /** Whether the user already exists on the server (before Slipway claimed the name). */
  userExists(t: Target): Promise<boolean>;
  create(t: Target): Promise<void>;
  setPassword(t: Target, password: string): Promise<void>;
  /** Suspended: logins refused and open sessions closed; else logins allowed again. */
  setSuspended(t: Target, suspended: boolean): Promise<void>;
  /** Makes the server enforce `t.access` where the engine can (see docs/runtimes.md "Real databases" for what each enforces). */
  setAccess(t: Target): Promise<void>;
  /** Ends every session of the database (open transactions are rolled back); data is kept. */
  restart(t: Target): Promise<void>;
  /** Writes a dump of the database to `file`. */
  dump(t: Target, file: string): Promise<void>;
  /** Replaces the database's content with the dump in `file`; Refused (data unchanged) when it cannot be applied. */
  restore(t: Target, file: string): Promise<void>;
  /** Removes the database (and the user when `ownsUser`). Missing pieces are not an error. */
  drop(t: Target, ownsUser: boolean): Promise<void>;
  usage(t: Target): Promise<Usage>;
  /** Brings up what must run (Redis: the servers of these databases). */
  start?(targets: Target[]): Promise<void>;
  stop?(): Promise<void>;
}

const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'ER_CON_COUNT_ERROR',
  '57P01',
  '57P03',
  '53300',
]);

/** Whether an error is worth retrying (the server could not be reached or was busy), not a refusal. */
export function isTransient(e: unknown): boolean {
  if (e instanceof Refused) return false;
  const code = String((e as { code?: unknown })?.code ?? '');
  if (TRANSIENT_CODES.has(code) || /^08/.test(code)) return true;
  return /timeout|timed out|Connection terminated/i.test((e as Error)?.message ?? '');
}

/** The full path of a program on PATH, or undefined. */
export function which(name: string): string | undefined {
  if (name.includes('/')) return canRun(name) ? name : undefined;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const p = join(dir, name);
    if (canRun(p)) return p;
  }
  return undefined;
}

function canRun(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface RunOptions {
  env?: Record<string, string>;
  /** A file fed to the program's standard input. */
  stdin?: string;
  /** A file the program's standard output is written to. */
  stdout?: string;
}

/**
 * Runs a program (arguments never hold a secret: passwords go through the environment or a
 * private file) and resolves with its exit code and the end of its error output.
 */
export function run(cmd: string, args: string[], o: RunOptions = {}): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...o.env }, stdio: [o.stdin ? 'pipe' : 'ignore', o.stdout ? 'pipe' : 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    const done: Promise<void>[] = [];
    if (o.stdin) {
      const input = createReadStream(o.stdin);
      input.on('error', (e) => child.kill() && reject(e));
      input.pipe(child.stdin!);
      child.stdin!.on('error', () => {}); // the program may exit before reading everything
    }
    if (o.stdout) {
      const out = createWriteStream(o.stdout, { mode: 0o600 });
      child.stdout!.pipe(out);
      done.push(new Promise((r, j) => out.on('finish', r).on('error', j)));
    }
    child.on('error', reject);
    child.on('close', (code) => void Promise.all(done).then(() => resolve({ code: code ?? 1, stderr: stderr.trim() }), reject));
  });
}

/** The last meaningful line of a tool's error output, for a failure reason. */
export const lastLine = (stderr: string) => stderr.split('\n').filter(Boolean).slice(-1)[0] ?? 'no output';
