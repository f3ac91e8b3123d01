// The request journal: every /v3 request this process answered, kept in memory (the last
// SLIPWAY_JOURNAL_MAX, and none older than SLIPWAY_JOURNAL_MINUTES), for a test to read back what
// its client sent (`GET /_admin/requests`). Per process: several processes on one PostgreSQL each
// keep their own. Bodies are cut to SLIPWAY_JOURNAL_BODY_BYTES, and secrets in them masked.
import picomatch from 'picomatch';
import { badRequest } from '../errors.js';
import type { ObservabilitySettings } from './settings.js';

export interface JournalEntry {
  /** Increasing within the process: a client can ask for what came after an entry it saw. */
  seq: number;
  time: string;
  method: string;
  path: string;
  /** The query string's parameters (a name given twice: its values in order). */
  query: Record<string, string | string[]>;
  status: number;
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

export class Journal {
  private entries: JournalEntry[] = [];
  private seq = 0;

  constructor(private settings: ObservabilitySettings['journal']) {}

  record(r: Recorded): void {
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
    this.entries.push({
      seq: ++this.seq,
      // When it arrived.
      time: new Date(Date.now() - r.durationMs).toISOString(),
      method: r.method,
      path: q >= 0 ? r.url.slice(0, q) : r.url,
      query: masked(query) as Record<string, string | string[]>,
      status: r.status,
      duration_ms: Math.round(r.durationMs * 1000) / 1000,
      key_id: r.keyId,
      request_id: r.requestId,
      idempotency_key: r.idempotencyKey,
      request_body: req.body,
      response_body: res.body,
      request_truncated: req.truncated,
      response_truncated: res.truncated,
    });
    if (this.entries.length > this.settings.max) this.entries.splice(0, this.entries.length - this.settings.max);
  }

  /** Drops what is older than the age limit. */
  private prune(): void {
    if (this.settings.maxAgeMs === undefined) return;
    const oldest = new Date(Date.now() - this.settings.maxAgeMs).toISOString();
    const keep = this.entries.findIndex((e) => e.time >= oldest);
    this.entries = keep < 0 ? [] : this.entries.slice(keep);
  }

  query(q: JournalQuery): JournalEntry[] {
    this.prune();
    const limit = q.limit === undefined ? 100 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw badRequest('limit must be an integer from 1 to 1000');
    const since = q.since === undefined ? undefined : Date.parse(q.since);
    if (since !== undefined && Number.isNaN(since)) throw badRequest('since must be an ISO 8601 time');
    const after = q.after === undefined ? 0 : Number(q.after);
    if (!Number.isInteger(after)) throw badRequest('after must be an integer');
    const status = q.status?.toLowerCase();
    if (status !== undefined && !/^[1-5](\d\d|xx)$/.test(status)) throw badRequest('status must be a status (404) or a class (4xx)');
    const method = q.method?.toUpperCase();
    const path = q.path;
    const pathMatches = path === undefined ? () => true : path.includes('*') ? picomatch(path, { dot: true }) : (p: string) => p.startsWith(path);
    const sinceIso = since === undefined ? undefined : new Date(since).toISOString();
    const out: JournalEntry[] = [];
    for (let i = this.entries.length - 1; i >= 0 && out.length < limit; i--) {
      const e = this.entries[i]!;
      if (e.seq <= after) break;
      if (sinceIso !== undefined && e.time < sinceIso) continue;
      if (method !== undefined && e.method !== method) continue;
      if (status !== undefined && (status.endsWith('xx') ? String(e.status)[0] !== status[0] : String(e.status) !== status)) continue;
      if (!pathMatches(e.path)) continue;
      out.push(e);
    }
    return out;
  }

  clear(): number {
    const n = this.entries.length;
    this.entries = [];
    return n;
  }
}
