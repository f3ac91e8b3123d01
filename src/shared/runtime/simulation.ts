// Simulation controls of the simulated runtime, for people testing clients:
// - progression: how each kind of operation advances — immediately, over a duration, or only
//   after the resource was read N times (so a client's polling loop can be tested deterministically);
// - faults: rules that make matching operations fail (e.g. the next deployment of app X fails in
//   the build step; 30 % of restores fail), listed and removable.
// Start-up defaults come from configuration; operator changes are stored in the database, so all
// processes sharing PostgreSQL see them.
import { sql, type CompiledQuery } from 'kysely';
import type { Database, Db, Tx } from '../db/index.js';
import { badRequest, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { first, reusable } from '../db/reusable.js';

export type Progression = { mode: 'immediate' } | { mode: 'duration'; ms: number } | { mode: 'reads'; reads: number };

export interface FaultRule {
  id: string;
  /** Operation kind, e.g. `deployment`, `restart`, `restore`, `backup`, `cron`, or `*`. */
  operation: string;
  /** Only for this resource (application, database, process ...); null = any. */
  target_id: string | null;
  /** Only in this phase (e.g. `build`); null = any phase. */
  phase: string | null;
  /** Chance of failing each matching phase, 0..1. */
  probability: number;
  /** How many more times the rule fires; null = unlimited. */
  remaining: number | null;
  message: string;
  created_at: string;
}

export const DEFAULT_PROGRESSION: Progression = { mode: 'duration', ms: 3000 };

/** Parses `deployment=duration:3000,restore=reads:3,*=immediate`. */
export function parseProgression(spec: string | undefined): Record<string, Progression> {
  const out: Record<string, Progression> = {};
  if (!spec) return out;
  for (const part of spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([\w*-]+)=(immediate|duration:(\d+)|reads:(\d+))$/.exec(part);
    if (!m) throw new Error(`invalid simulation progression "${part}" (expected op=immediate|duration:<ms>|reads:<n>)`);
    out[m[1]!] =
      m[2] === 'immediate'
        ? { mode: 'immediate' }
        : m[3] !== undefined
          ? { mode: 'duration', ms: Number(m[3]) }
          : { mode: 'reads', reads: Math.max(1, Number(m[4])) };
  }
  return out;
}

export function validateProgression(p: unknown): Progression {
  const v = p as Record<string, unknown>;
  if (v?.mode === 'immediate') return { mode: 'immediate' };
  if (v?.mode === 'duration' && Number.isInteger(v.ms) && (v.ms as number) >= 0) return { mode: 'duration', ms: v.ms as number };
  if (v?.mode === 'reads' && Number.isInteger(v.reads) && (v.reads as number) >= 1) return { mode: 'reads', reads: v.reads as number };
  throw badRequest('progression must be {"mode":"immediate"}, {"mode":"duration","ms":<integer ≥ 0>} or {"mode":"reads","reads":<integer ≥ 1>}');
}

/** The progression table and the fault rules, as `settings` reads them. */
export interface SettingsRow {
  progression: ProgressionRow[];
  faults: FaultRow[];
}

/** The progression table and the fault rules in one statement (PostgreSQL: see forPhase). */
const settings = reusable(
  () => sql<SettingsRow>`
      SELECT (SELECT coalesce(json_agg(p), '[]') FROM sim_progression p) AS progression,
        (SELECT coalesce(json_agg(f ORDER BY created_at), '[]') FROM sim_faults f) AS faults`,
);

export class Simulation {
  private startupFaults: FaultRule[];
  private db: Db;
  /**
   * SQLite: an in-memory copy of the progression table, loaded at start and refreshed every few
   * seconds outside any transaction (SQLite has one connection: reading it from inside a job's
   * transaction would wait on itself). PostgreSQL reads the table each time, through the caller's
   * transaction when there is one: a second pooled connection per job transaction could exhaust
   * the pool with transactions that all wait for one more.
   */
  private cache?: Map<string, Progression>;
  private refresher?: NodeJS.Timeout;

  constructor(
    private database: Database,
    private defaults: Record<string, Progression>,
    startupFaults: Omit<FaultRule, 'id' | 'created_at'>[] = [],
  ) {
    this.db = database.db;
    this.startupFaults = startupFaults.map((f) => ({ ...f, id: newId(), created_at: new Date().toISOString() }));
  }

  async start(): Promise<void> {
    if (this.database.kind !== 'sqlite') return;
    this.cache = await this.load();
    this.refresher = setInterval(
      () =>
        void this.load().then(
          (m) => (this.cache = m),
          () => {},
        ),
      2000,
    );
    this.refresher.unref();
  }

  stop(): void {
    if (this.refresher) clearInterval(this.refresher);
  }

  private async load(tx: Tx = this.db): Promise<Map<string, Progression>> {
    return tableOf(await tx.selectFrom('sim_progression').selectAll().execute());
  }

  async progression(operation: string, tx?: Tx): Promise<Progression> {
    return this.pick(this.cache ?? (await this.load(tx)), operation);
  }

  private pick(table: Map<string, Progression>, operation: string): Progression {
    return table.get(operation) ?? table.get('*') ?? this.defaults[operation] ?? this.defaults['*'] ?? DEFAULT_PROGRESSION;
  }

  /**
   * For a phase about to be judged: the operation's progression and, where the tables are read on
   * every call (PostgreSQL), the stored fault rules with it, both in one statement (a phase step
   * then reads them in one round trip, not two). Pass `faults` on to `shouldFail`. `read`: that
   * statement's row (see `settingsReads`) when the caller read it in this transaction.
   */
  async forPhase(operation: string, tx: Tx, read?: SettingsRow): Promise<{ progression: Progression; faults?: FaultRow[] }> {
    if (this.database.kind !== 'postgres') return { progression: await this.progression(operation, tx) };
    const { progression, faults } = read ?? (await first(tx, settings(tx, {})))!;
    return { progression: this.pick(tableOf(progression), operation), faults };
  }

  /** The statement `forPhase` reads on PostgreSQL, for a caller to read with its own and pass as `read` (none on SQLite). */
  settingsReads(tx: Tx): CompiledQuery[] {
    return this.database.kind === 'postgres' ? [settings(tx, {})] : [];
  }

  async listProgression(): Promise<Record<string, Progression>> {
    const rows = await this.db.selectFrom('sim_progression').selectAll().execute();
    return { ...this.defaults, ...Object.fromEntries(tableOf(rows)) };
  }

  async setProgression(operation: string, p: Progression): Promise<void> {
    await this.db
      .insertInto('sim_progression')
      .values({ operation, setting: JSON.stringify(p) })
      .onConflict((oc) => oc.column('operation').doUpdateSet({ setting: JSON.stringify(p) }))
      .execute();
    this.cache?.set(operation, p);
  }

  async clearProgression(operation: string): Promise<void> {
    await this.db.deleteFrom('sim_progression').where('operation', '=', operation).execute();
    this.cache?.delete(operation);
  }

  async listFaults(): Promise<FaultRule[]> {
    const rows = await this.db.selectFrom('sim_faults').selectAll().orderBy('created_at').execute();
    return [...this.startupFaults, ...rows.map(rowToRule)];
  }

  async addFault(input: Partial<FaultRule>): Promise<FaultRule> {
    if (!input.operation || typeof input.operation !== 'string') throw badRequest('operation is required (e.g. "deployment", "restore" or "*")');
    const probability = input.probability ?? 1;
    if (typeof probability !== 'number' || probability < 0 || probability > 1) throw badRequest('probability must be between 0 and 1');
    if (input.remaining !== undefined && input.remaining !== null && (!Number.isInteger(input.remaining) || input.remaining < 1))
      throw badRequest('remaining must be a positive integer or null');
    const rule: FaultRule = {
      id: newId(),
      operation: input.operation,
      target_id: input.target_id ?? null,
      phase: input.phase ?? null,
      probability,
      remaining: input.remaining ?? null,
      message: input.message ?? `Simulated failure (${input.operation}${input.phase ? ` in ${input.phase}` : ''})`,
      created_at: new Date().toISOString(),
    };
    await this.db
      .insertInto('sim_faults')
      .values({ ...rule, probability: String(rule.probability) })
      .execute();
    return rule;
  }

  async removeFault(id: string): Promise<void> {
    const before = this.startupFaults.length;
    this.startupFaults = this.startupFaults.filter((f) => f.id !== id);
    if (this.startupFaults.length !== before) return;
    const r = await this.db.deleteFrom('sim_faults').where('id', '=', id).executeTakeFirst();
    if (!Number(r.numDeletedRows)) throw notFound('Fault rule');
  }

  /**
   * The failure message when a fault rule fires for this phase, consuming one use of the rule.
   * `stored`: the stored rules as `forPhase` read them in this transaction (else they are read now).
   */
  async shouldFail(
    tx: Tx,
    operation: string,
    targetId: string | null,
    phase: string,
    roll: () => number = Math.random,
    stored?: FaultRow[],
  ): Promise<string | null> {
    const matches = (f: Pick<FaultRule, 'operation' | 'target_id' | 'phase'>) =>
      (f.operation === operation || f.operation === '*') && (f.target_id === null || f.target_id === targetId) && (f.phase === null || f.phase === phase);
    for (const f of this.startupFaults) {
      if (!matches(f) || (f.remaining !== null && f.remaining <= 0)) continue;
      if (roll() >= f.probability) continue;
      if (f.remaining !== null) f.remaining--;
      return f.message;
    }
    const rows = stored ?? (await tx.selectFrom('sim_faults').selectAll().orderBy('created_at').execute());
    for (const row of rows) {
      const f = rowToRule(row);
      if (!matches(f)) continue;
      if (roll() >= f.probability) continue;
      if (f.remaining !== null) {
        // Consume one use atomically; a concurrent consumer may have taken the last one.
        const r = await tx
          .updateTable('sim_faults')
          .set({ remaining: f.remaining - 1 })
          .where('id', '=', f.id)
          .where('remaining', '=', f.remaining)
          .executeTakeFirst();
        if (!Number(r.numUpdatedRows)) continue;
        if (f.remaining - 1 <= 0) await tx.deleteFrom('sim_faults').where('id', '=', f.id).execute();
      }
      return f.message;
    }
    return null;
  }
}

/** A stored progression as its table holds it. */
interface ProgressionRow {
  operation: string;
  setting: string;
}

/** The stored progressions by operation. */
const tableOf = (rows: ProgressionRow[]) => new Map(rows.map((r) => [r.operation, JSON.parse(r.setting) as Progression]));

/** A stored fault rule as its table holds it. */
export interface FaultRow {
  id: string;
  operation: string;
  target_id: string | null;
  phase: string | null;
  probability: string;
  remaining: number | null;
  message: string;
  created_at: string;
}

function rowToRule(r: FaultRow): FaultRule {
  return { ...r, probability: Number(r.probability) };
}

/**
 * Whether one phase (of `phaseCount`) of an operation has finished under a progression policy:
 * a duration is split evenly over the phases; `reads` needs that many reads since the phase began.
 */
export function phaseDone(p: Progression, phaseCount: number, elapsedMs: number, reads: number): { done: boolean; checkAfterMs: number } {
  if (p.mode === 'immediate') return { done: true, checkAfterMs: 0 };
  if (p.mode === 'duration') {
    const per = p.ms / Math.max(1, phaseCount);
    return elapsedMs >= per ? { done: true, checkAfterMs: 0 } : { done: false, checkAfterMs: Math.max(5, Math.ceil(per - elapsedMs)) };
  }
  return reads >= p.reads ? { done: true, checkAfterMs: 0 } : { done: false, checkAfterMs: 5000 };
}
