// The generic helpers every suite shares: waiting, polling, status and error-body assertions, and
// a few constants. Area support files (test/<area>/support.ts) hold only area-specific helpers.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql, type CompiledQuery } from 'kysely';
import type { Tx } from '../../src/shared/db/index.js';
import type { TestServer } from './server.js';

/** Resolves after `ms` milliseconds (negative values wait 0 ms). */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/**
 * Polls `fn` until it returns a truthy value, which is returned. The timeout is a failure guard
 * (a hung state machine), never a timing assertion; `what` names the condition in the failure.
 */
export async function waitFor<T>(
  what: string,
  fn: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
  intervalMs = 25,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as T;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** What `expectStatus` and `expectError` need of a response (the harness's or a child process's). */
export interface StatusResponse<T = any> {
  status: number;
  body: T;
  text?: string;
  headers?: Headers;
}

const shown = (r: StatusResponse) => r.text ?? JSON.stringify(r.body);

/** Asserts the status (printing the body when it differs) and returns the body. */
export function expectStatus<T = any>(r: StatusResponse<T>, status: number): T {
  assert.equal(r.status, status, `expected ${status}, got ${r.status}: ${shown(r)}`);
  return r.body;
}

/**
 * The contract's error body with the expected status: a JSON object `{message, status, data?}` and
 * nothing else, `status` equal to the HTTP status, a non-empty message (equal to `message` when it
 * is a string, matching it when it is a RegExp). `data: 'absent'` also requires `data` to be
 * absent or empty. Returns the message.
 */
export function expectError(r: StatusResponse, status: number, message?: RegExp | string, opts: { data?: 'absent' } = {}): string {
  assert.equal(r.status, status, `expected ${status}, got ${r.status}: ${shown(r)}`);
  assert.ok(r.body && typeof r.body === 'object' && !Array.isArray(r.body), `error body is not an object: ${shown(r)}`);
  for (const k of Object.keys(r.body)) assert.ok(['data', 'message', 'status'].includes(k), `unexpected property "${k}" in error body ${shown(r)}`);
  assert.equal(r.body.status, status, `body.status equals the HTTP status: ${shown(r)}`);
  assert.equal(typeof r.body.message, 'string');
  assert.ok(r.body.message.length > 0, 'the error message is empty');
  if (opts.data === 'absent') assert.ok(r.body.data === undefined || Object.keys(r.body.data).length === 0, `data should be empty or absent: ${shown(r)}`);
  if (r.headers) assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  if (typeof message === 'string') assert.equal(r.body.message, message);
  else if (message) assert.match(r.body.message, message);
  return r.body.message as string;
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A well-formed id that names nothing. */
export const MISSING = '0d3c2b1a-9e8f-4a7b-8c6d-5e4f3a2b1c0d';

let named = 0;
/**
 * A name no other call in the run gives: `prefix`, this process's id and a counter (`app 4242-7`).
 * `sep: '_'` makes an identifier (`crash_4242_7`, for a database's user or name); `random` adds a
 * few random hex digits, for names that outlive the run (on a database server the machine keeps).
 */
export function uniqueName(prefix = 'name', opts: { sep?: ' ' | '_'; random?: boolean } = {}): string {
  const sep = opts.sep ?? ' ';
  const parts = [process.pid, ++named, ...(opts.random ? [randomBytes(2).toString('hex')] : [])];
  return `${prefix}${sep}${parts.join(sep === ' ' ? '-' : sep)}`;
}

/** Every item of a paginated list (follows offset/limit until total). */
export async function listAll<T = any>(s: TestServer, path: string, token?: string): Promise<T[]> {
  const out: T[] = [];
  for (let offset = 0; ; offset += 100) {
    const r = expectStatus(await s.get(`${path}${path.includes('?') ? '&' : '?'}limit=100&offset=${offset}`, { token }), 200);
    out.push(...(r.data as T[]));
    if (offset + 100 >= r.total) return out;
  }
}

/**
 * PostgreSQL: makes `change` in a transaction of its own and, while that transaction holds the rows
 * it changed, sends `request`; commits once the request waits for a row lock. Resolves to the
 * request's response (for a writer that must not overwrite what another one committed meanwhile).
 */
export async function whileRowsHeld<T>(s: TestServer, change: (tx: Tx) => Promise<unknown>, request: () => Promise<T>): Promise<T> {
  const db = s.app.database.db;
  let sent: Promise<T> | undefined;
  await db.transaction().execute(async (tx) => {
    await change(tx);
    sent = request();
    await waitFor(
      'the request to wait for the rows held',
      async () =>
        (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`.execute(db))
          .rows[0]!.n > 0,
    );
  });
  return sent!;
}

/**
 * The indexes the plan of `query` reads, as the server's connections plan it: on PostgreSQL its
 * generic plan (a prepared statement's, planned without the values, which the server's connections
 * always use); on SQLite the plan of the statement with its values bound. `indexesOnly`: with
 * sequential scans ruled out (PostgreSQL), so that on a small table the choice among the indexes is
 * what is planned.
 */
export async function plannedIndexes(s: TestServer, query: CompiledQuery, opts: { indexesOnly?: boolean } = {}): Promise<string[]> {
  const { db, file } = s.app.database;
  if (file) {
    const rows = file.prepare(`EXPLAIN QUERY PLAN ${query.sql}`).all(...(query.parameters as unknown[])) as { detail: string }[];
    return rows.flatMap((r) => [...r.detail.matchAll(/USING (?:COVERING )?INDEX (\w+)/g)].map((m) => m[1]!));
  }
  return db.transaction().execute(async (tx) => {
    if (opts.indexesOnly) for (const scan of ['seqscan', 'bitmapscan']) await sql`SELECT set_config(${`enable_${scan}`}, 'off', true)`.execute(tx);
    await sql`PREPARE planned AS ${sql.raw(query.sql)}`.execute(tx);
    const values = query.parameters.map((v) => sql.lit(v));
    const plan = await sql<{ 'QUERY PLAN': unknown }>`EXPLAIN (FORMAT JSON) EXECUTE planned${values.length ? sql`(${sql.join(values)})` : sql``}`.execute(tx);
    await sql`DEALLOCATE planned`.execute(tx);
    return [...JSON.stringify(plan.rows[0]!['QUERY PLAN']).matchAll(/"Index Name":"(\w+)"/g)].map((m) => m[1]!);
  });
}
