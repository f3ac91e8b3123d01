// The API keys (and their companies) that requests presented, kept in memory so a read does not
// look them up again. A change to a key or a company reaches every process at once through the
// database: triggers (migration 190_auth_changes) bump a generation row on SQLite, which each
// request reads (one indexed row, in-process), and send a NOTIFY on PostgreSQL, which each
// process LISTENs for. While the LISTEN connection is down the cache is bypassed, and so it is in
// the process that makes a change from the moment it announces it (`changing`, inside its
// transaction) until that transaction's NOTIFY comes back. Every process acknowledges the changes
// of the others once it has cleared its cache (a NOTIFY on ACK_CHANNEL), and the process that made
// a change answers only when every other listening process has acknowledged it (`announced`): the
// NOTIFY reaches each listener on its own connection, so without the acknowledgements another
// process could still serve the old key to the client's very next request.
import { sql } from 'kysely';
import type SQLite from 'better-sqlite3';
import type PG from 'pg';
import type { Grants } from './rbac.js';
import type { ApiKeysTable, CompaniesTable } from '../db/schema.js';
import { pgDriver, type Database, type Tx } from '../db/index.js';
import { contentVersion } from '../db/content-version.js';

export const AUTH_CHANNEL = 'slipway_auth_changed';
/** Where a process acknowledges another's change (payload: the change's transaction id). */
export const ACK_CHANNEL = 'slipway_auth_ack';
/** The `application_name` of the LISTEN connections, by which a process finds the others. */
export const LISTENER_NAME = 'slipway-auth-listener';

export interface KeyRows {
  key: ApiKeysTable;
  company: CompaniesTable | undefined;
  /** Matched through the previous token of a rotated key. */
  viaOld: boolean;
  /** Computed from the key's roles and capabilities on first use. */
  grants?: Grants;
}

interface Entry {
  rows: KeyRows;
  generation: number;
  loadedAt: number;
}

/** Entries are also re-read after this long, so nothing lives on past a missed change. */
const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;
/** How long a change announced by `changing` bypasses the cache when no NOTIFY comes (a rollback). */
const PENDING_MS = 10_000;

export class KeyCache {
  private entries = new Map<string, Entry>();
  /** SQLite: the database's generation; PostgreSQL: changes seen by the listener. */
  private generation = 0;
  private listener: PG.Client | undefined;
  private listening = false;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  /** PostgreSQL: this process's transactions that change keys or companies, until their NOTIFY (deadline). */
  private pending = new Map<string, number>();
  /**
   * PostgreSQL: this process's changes whose NOTIFY came back, until every other listener
   * acknowledged them, with the backend ids of those that did (also gathered while still pending).
   */
  private acks = new Map<string, { until: number; by: Set<number> }>();
  private waiters: (() => void)[] = [];
  /**
   * SQLite: the generation, read on every request straight from the file (not through the query
   * builder, which would cost a cached read much of its time). Inside another request's transaction it may see
   * that transaction's change before the commit: the cache is then cleared early, never kept late.
   */
  private generationRow: SQLite.Statement<[], { n: number }> | undefined;
  /** SQLite: the database's content version when the generation was last read (unchanged: so is the generation). */
  private generationAsOf: string | undefined;

  constructor(
    private database: Database,
    private databaseUrl: string | undefined,
  ) {}

  /** PostgreSQL: opens the LISTEN connection (the cache serves once it is up). */
  async start(): Promise<void> {
    if (this.database.kind !== 'postgres' || !this.databaseUrl) return;
    await this.listen().catch(() => this.reconnectLater());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.listening = false;
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => {});
  }

  private async listen(): Promise<void> {
    const client = new (pgDriver().Client)({ connectionString: this.databaseUrl, application_name: LISTENER_NAME });
    client.on('notification', (n) => {
      const id = n.payload ?? '';
      if (n.channel === ACK_CHANNEL) this.acked(id, n.processId);
      else {
        this.invalidate();
        const ours = this.pending.get(id);
        if (ours !== undefined) {
          this.awaitingAcks(id, ours);
          this.pending.delete(id);
        } else client.query('SELECT pg_notify($1, $2)', [ACK_CHANNEL, id]).catch(() => {});
      }
      for (const w of this.waiters.splice(0)) w();
    });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    await client.connect();
    await client.query(`LISTEN ${AUTH_CHANNEL}; LISTEN ${ACK_CHANNEL}`);
    if (this.stopped) return void (await client.end());
    this.listener = client;
    // Whatever changed while nobody listened: start empty.
    this.invalidate();
    this.listening = true;
  }

  private lost(client: PG.Client) {
    if (this.listener !== client) return;
    this.listener = undefined;
    this.listening = false;
    this.invalidate();
    client.end().catch(() => {});
    this.reconnectLater();
  }

  private reconnectLater() {
    if (this.stopped) return;
    this.retry = setTimeout(() => void this.listen().catch(() => this.reconnectLater()), 1000);
    this.retry.unref();
  }

  /**
   * Called inside a transaction that changes an API key or a company (the triggers announce the
   * change to other processes): from now until the change is announced back, this process reads
   * keys from the database, so no answer after the commit relies on what was true before it.
   */
  async changing(tx: Tx): Promise<void> {
    if (this.database.kind !== 'postgres') return;
    const { rows } = await sql<{ id: string }>`SELECT txid_current()::text AS id`.execute(tx);
    this.pending.set(rows[0]!.id, Date.now() + PENDING_MS);
    this.invalidate();
  }

  /** Another process cleared its cache for change `id` (kept only for this process's changes). */
  private acked(id: string, backend: number) {
    const until = this.pending.get(id);
    (until !== undefined ? this.awaitingAcks(id, until) : this.acks.get(id))?.by.add(backend);
  }

  /** The acknowledgements of this process's change `id` (deadline `until`), gathered so far. */
  private awaitingAcks(id: string, until: number): { until: number; by: Set<number> } {
    let a = this.acks.get(id);
    if (!a) this.acks.set(id, (a = { until, by: new Set() }));
    return a;
  }

  /**
   * Resolves once every change announced by `changing` has come back as a NOTIFY and every other
   * process listening then has acknowledged it, i.e. cleared its cache (at most `timeoutMs` in all):
   * called after a commit, before answering, so that the client's next request, whichever process
   * it reaches, is answered from what the change left.
   */
  async announced(timeoutMs = 2000): Promise<void> {
    if (this.pending.size === 0 && this.acks.size === 0) return;
    const deadline = Date.now() + timeoutMs;
    const until = (done: () => boolean) => this.waitFor(done, deadline);
    await until(() => this.settled(Date.now()));
    if (this.acks.size === 0 || !this.listener) return;
    const others = await this.listener
      .query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database() AND pid <> pg_backend_pid()', [
        LISTENER_NAME,
      ])
      .then((r) => r.rows.map((row) => row.pid))
      .catch(() => []);
    await until(() => this.acknowledged(others, Date.now()));
  }

  /** Waits (woken by each notification, or every 50 ms) until `done`, the deadline, or a lost listener. */
  private async waitFor(done: () => boolean, deadline: number): Promise<void> {
    while (!done() && this.listening && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50).unref();
      });
    }
  }

  /**
   * Drops the changes whose NOTIFY came back and that every one of `others` acknowledged (or that
   * are past their deadline); true when none is left. A change still pending keeps the
   * acknowledgements that came before its own NOTIFY.
   */
  private acknowledged(others: number[], now: number): boolean {
    for (const [id, a] of this.acks) {
      if (a.until <= now || (!this.pending.has(id) && others.every((pid) => a.by.has(pid)))) this.acks.delete(id);
    }
    return this.acks.size === 0;
  }

  private settled(now: number): boolean {
    for (const [id, until] of this.pending) if (until <= now) this.pending.delete(id);
    return this.pending.size === 0;
  }

  private invalidate() {
    this.generation++;
    this.entries.clear();
  }

  /**
   * The key whose current or previous token hashes to `hash`, with its company, from memory when
   * nothing changed since it was read; `load` reads them from the database otherwise, and what it
   * read is kept when `keep` says so. `content`: SQLite's content version now (see contentVersion).
   */
  async get(
    hash: string,
    load: () => Promise<KeyRows | undefined>,
    keep: (rows: KeyRows) => boolean,
    now = Date.now(),
    content = contentVersion(this.database.db),
  ): Promise<KeyRows | undefined> {
    let usable: boolean;
    if (this.database.kind === 'sqlite') {
      if (content === undefined || content !== this.generationAsOf) {
        this.generationRow ??= this.database.file!.prepare('SELECT n FROM auth_generation WHERE id = 1');
        const g = Number(this.generationRow.get()?.n ?? 0);
        if (g !== this.generation) {
          this.entries.clear();
          this.generation = g;
        }
        this.generationAsOf = content;
      }
      usable = true;
    } else usable = this.listening && (this.pending.size === 0 || this.settled(now));
    if (!usable) return load();
    const e = this.entries.get(hash);
    if (e && e.generation === this.generation && now - e.loadedAt < MAX_AGE_MS) return e.rows;
    // A change noticed while loading makes what was loaded unsafe to keep.
    const generation = this.generation;
    const rows = await load();
    if (rows && keep(rows) && generation === this.generation) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(hash, { rows, generation, loadedAt: now });
    }
    return rows;
  }
}
