// The request journal: every /v3 request the server answered, for a test to read back what its
// client sent (`GET /_admin/requests`), kept in the database (`request_journal`,
// journal-storage.ts): every process of a server records into, reads and clears the same entries.
// Bounded as SLIPWAY_JOURNAL_MAX (the newest kept) and SLIPWAY_JOURNAL_MINUTES (none older) say:
// every read applies the bounds, and rows past them are deleted in batches. Bodies are cut to
// SLIPWAY_JOURNAL_BODY_BYTES, and secrets in them masked.
//
// An entry is committed before its response is sent (`record`, awaited by the onSend hook), so a
// client that got a response and then asks any process finds that request: the entries of one
// turn of the event loop are written together, one INSERT, while the previous batch is being
// written the next one gathers (a response waits for one batch, not for a write of its own).
import picomatch from 'picomatch';
import { AsyncResource } from 'node:async_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../db/index.js';
import { badRequest } from '../errors.js';
import { deleteRows, insertRows, selectRows, trimRows, type Bounds, type JournalRow, type NewJournalRow, type RowFilter } from './journal-storage.js';
import type { ObservabilitySettings } from './settings.js';

export interface JournalEntry {
  /** Increasing in the order entries were committed, across processes: a client can ask for what came after an entry it saw. */
  seq: number;
  time: string;
  method: string;
  path: string;
  /** The query string's parameters (a name given twice: its values in order). */
  query: Record<string, string | string[]>;
  status: number;
  /** Until the response was ready to be sent. */
  duration_ms: number;
  /** The API key's id (never its token), or null when the request was not authenticated. */
  key_id: string | null;
  request_id: string;
  idempotency_key: string | null;
  request_body: unknown;
  response_body: unknown;
  /** Whether a body was longer than the limit: it is then its first bytes, as a string. */
  request_truncated: boolean;
  response_truncated: boolean;
}

export interface Recorded {
  method: string;
  url: string;
  status: number;
  durationMs: number;
  keyId: string | null;
  requestId: string;
  idempotencyKey: string | null;
  /** The parsed request body. */
  body: unknown;
  /** The response as sent (JSON text, usually). */
  payload: unknown;
}

/**
 * Names of fields whose values are secrets: passwords, tokens, secrets and keys that sign or
 * decrypt (an access key's id is not one). A variable's `value` beside its `key` is masked too:
 * environment variables are secrets at rest (sealed by app.secrets), so they are here.
 */
const SECRET_FIELD = /pass(word)?$|passphrase|secret|token|private_?key|credential|authorization|signing_?key|connection_?string/i;
export const MASK = '[masked]';

/** A copy of a JSON value with the values of secret fields masked. */
export function masked(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(masked);
  if (!v || typeof v !== 'object') return v;
  const o = v as Record<string, unknown>;
  const variable = typeof o.key === 'string' && 'value' in o;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(o)) out[k] = x !== null && x !== undefined && (SECRET_FIELD.test(k) || (variable && k === 'value')) ? MASK : masked(x);
  return out;
}

/** A body as kept: masked, and cut to `limit` bytes of its JSON text when longer. */
function kept(body: unknown, limit: number): { body: unknown; truncated: boolean } {
  if (body === undefined || body === null || body === '') return { body: null, truncated: false };
  let value: unknown = body;
  if (typeof body === 'string' || Buffer.isBuffer(body)) {
    const text = String(body);
    try {
      value = JSON.parse(text);
    } catch {
      value = text;
    }
  } else if (typeof body === 'object' && typeof (body as { pipe?: unknown }).pipe === 'function') return { body: '[stream]', truncated: false };
  value = masked(value);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (Buffer.byteLength(text) <= limit) return { body: value, truncated: false };
  return { body: Buffer.from(text).subarray(0, limit).toString('utf8'), truncated: true };
}

export interface JournalQuery {
  /** A glob (`*` within a path segment, `**` across them) when it has a `*`, else a prefix. */
  path?: string;
  method?: string;
  /** A status (`404`) or a class (`4xx`). */
  status?: string;
  /** Entries at or after this time (ISO 8601). */
  since?: string;
  /** Entries after this sequence number. */
  after?: string;
  /** At most this many, the newest first (default 100, at most 1000). */
  limit?: string;
}

/** Entries a glob reads per page while it looks for `limit` matches. */
const SCAN_PAGE = 500;

const entryOf = (r: JournalRow): JournalEntry => ({
  seq: Number(r.seq),
  time: r.time,
  method: r.method,
  path: r.path,
  query: JSON.parse(r.query) as Record<string, string | string[]>,
  status: Number(r.status),
  duration_ms: Number(r.duration_ms),
  key_id: r.key_id,
  request_id: r.request_id,
  idempotency_key: r.idempotency_key,
  request_body: r.request_body === null ? null : JSON.parse(r.request_body),
  response_body: r.response_body === null ? null : JSON.parse(r.response_body),
  request_truncated: !!r.request_truncated,
  response_truncated: !!r.response_truncated,
});

export class Journal {
  /** Entries of the batch still gathering. */
  private pending: NewJournalRow[] = [];
  /** The batch still gathering: written after the one before it, at the end of a turn. */
  private batch: Promise<void> | undefined;
  /** The last batch (and trim) started: batches are written one after another. */
  private chain: Promise<void> = Promise.resolve();
  private sinceTrim = 0;
  /** Rows this process writes between two trims. */
  private readonly trimEvery: number;
  /** Runs in the context the journal was made in, never a request's (a pure operation's checked scope). */
  private readonly write: (rows: NewJournalRow[]) => Promise<void>;

  constructor(
    private settings: ObservabilitySettings['journal'],
    private database: Database,
    private log: FastifyBaseLogger,
  ) {
    this.trimEvery = Math.max(10, Math.ceil(settings.max / 10));
    this.write = AsyncResource.bind((rows: NewJournalRow[]) => this.insert(rows));
  }

  /** Records a request; resolves once its entry is committed (never rejects: a failed write is logged). */
  record(r: Recorded): Promise<void> {
    const q = r.url.indexOf('?');
    const query: Record<string, string | string[]> = {};
    if (q >= 0) {
      for (const [k, v] of new URLSearchParams(r.url.slice(q + 1))) {
        const had = query[k];
        query[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
      }
    }
    const req = kept(r.body, this.settings.bodyBytes);
    const res = kept(r.payload, this.settings.bodyBytes);
    this.pending.push({
      // When it arrived.
      time: new Date(Date.now() - r.durationMs).toISOString(),
      method: r.method,
      path: q >= 0 ? r.url.slice(0, q) : r.url,
      query: JSON.stringify(masked(query)),
      status: r.status,
      duration_ms: Math.round(r.durationMs * 1000) / 1000,
      key_id: r.keyId,
      request_id: r.requestId,
      idempotency_key: r.idempotencyKey,
      request_body: req.body === null ? null : JSON.stringify(req.body),
      response_body: res.body === null ? null : JSON.stringify(res.body),
      request_truncated: req.truncated ? 1 : 0,
      response_truncated: res.truncated ? 1 : 0,
    });
    return (this.batch ??= this.nextBatch());
  }

  private nextBatch(): Promise<void> {
    const written = this.chain
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => {
        this.batch = undefined;
        const rows = this.pending;
        this.pending = [];
        return this.write(rows);
      });
    this.chain = written.then(() => this.trimIfDue());
    return written;
  }

  private async insert(rows: NewJournalRow[]): Promise<void> {
    if (!rows.length) return;
    try {
      await insertRows(this.database.db, rows);
      this.sinceTrim += rows.length;
    } catch (e) {
      this.log.warn({ err: (e as Error).message, lost: rows.length }, 'request journal entries lost');
    }
  }

  /** Deletes the rows past the bounds once this process wrote `trimEvery` since the last time. */
  private async trimIfDue(): Promise<void> {
    if (this.sinceTrim < this.trimEvery) return;
    this.sinceTrim = 0;
    await trimRows(this.database.db, this.bounds()).catch((e: Error) => this.log.warn({ err: e.message }, 'request journal trim failed'));
  }

  private bounds(): Bounds {
    const { max, maxAgeMs } = this.settings;
    return { max, oldest: maxAgeMs === undefined ? undefined : new Date(Date.now() - maxAgeMs).toISOString() };
  }

  /** Once what this process recorded so far is written. */
  private written(): Promise<void> {
    return this.batch ?? this.chain;
  }

  async query(q: JournalQuery): Promise<JournalEntry[]> {
    const limit = q.limit === undefined ? 100 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw badRequest('limit must be an integer from 1 to 1000');
    const since = q.since === undefined ? undefined : Date.parse(q.since);
    if (since !== undefined && Number.isNaN(since)) throw badRequest('since must be an ISO 8601 time');
    const after = q.after === undefined ? 0 : Number(q.after);
    if (!Number.isInteger(after)) throw badRequest('after must be an integer');
    const status = q.status?.toLowerCase();
    if (status !== undefined && !/^[1-5](\d\d|xx)$/.test(status)) throw badRequest('status must be a status (404) or a class (4xx)');
    const filter: RowFilter = {
      after,
      since: since === undefined ? undefined : new Date(since).toISOString(),
      method: q.method?.toUpperCase(),
      status: status === undefined ? undefined : status.endsWith('xx') ? [Number(status[0]) * 100, Number(status[0]) * 100 + 100] : Number(status),
    };
    await this.written();
    const bounds = this.bounds();
    const path = q.path;
    if (path === undefined || !path.includes('*')) return (await selectRows(this.database.db, bounds, { ...filter, pathPrefix: path }, limit)).map(entryOf);
    // A glob: pages of the newest entries, matched here, until `limit` match.
    const matches = picomatch(path, { dot: true });
    const out: JournalEntry[] = [];
    for (let before: number | undefined; ;) {
      const rows = await selectRows(this.database.db, bounds, { ...filter, before }, SCAN_PAGE);
      for (const r of rows) if (matches(r.path) && out.push(entryOf(r)) >= limit) return out;
      if (rows.length < SCAN_PAGE) return out;
      before = Number(rows[rows.length - 1]!.seq);
    }
  }

  /** Deletes every process's entries; returns how many there were (within the bounds). */
  async clear(): Promise<number> {
    await this.written();
    return deleteRows(this.database.db, this.bounds());
  }

  /** Writes what is still gathering. */
  close(): Promise<void> {
    return this.written();
  }
}
