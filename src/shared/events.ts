// Events: the one place where resource modules announce changes (APP_CREATE, APP_DEPLOY, ...).
//
// `emit(tx, app, { type, companyId, data })` records the event in `events` inside the caller's
// transaction (an outbox: the event exists if and only if the change committed) and, in the same
// transaction, hands it to the registered sinks. The webhooks module is the sink today: it creates
// one delivery (a durable job) per enabled webhook of the company subscribed to the type.
//
// Which operation emits which event, and how its payload (`data`) is built, is one table that the
// modules register into (`registerEventSource`); `eventSources()` lists it for documentation and
// tests. docs/events.md describes every entry and how a new module joins.
import type { Kysely, Migration } from 'kysely';
import type { AppContext } from './context.js';
import type { Tx } from './db/index.js';
import { newId } from './ids.js';

export const EVENT_TYPES = [
  'APP_CREATE',
  'APP_UPDATE',
  'APP_DELETE',
  'APP_DEPLOY',
  'DATABASE_CREATE',
  'DATABASE_UPDATE',
  'DATABASE_DELETE',
  'STATIC_SITE_CREATE',
  'STATIC_SITE_UPDATE',
  'STATIC_SITE_DELETE',
  'STATIC_SITE_DEPLOY',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface EventsTable {
  id: string;
  company_id: string;
  type: EventType;
  /** JSON of the event's `data` (the resource's representation at the time of the change). */
  data: string;
  created_at: string;
}

declare module './db/schema.js' {
  interface DB {
    events: EventsTable;
  }
}

/** The `events` table; included in the migrations of the module that owns the sink (webhooks). */
export const eventMigrations: Record<string, Migration> = {
  '060_events': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('events')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('type', 'varchar(32)', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('events_company').on('events').columns(['company_id', 'created_at', 'id']).execute();
    },
  },
};

export interface RecordedEvent {
  id: string;
  type: EventType;
  companyId: string;
  data: Record<string, unknown>;
  createdAt: string;
}

export interface EmitInput {
  type: EventType;
  companyId: string;
  data: Record<string, unknown>;
}

/** Receives every recorded event inside the emitting transaction (e.g. webhook fan-out). */
export type EventSink = (tx: Tx, app: AppContext | null, event: RecordedEvent) => Promise<void>;

const sinks: EventSink[] = [];

export function registerEventSink(sink: EventSink): void {
  if (!sinks.includes(sink)) sinks.push(sink);
}

/**
 * Records an event in the caller's transaction and fans it out to the sinks in the same transaction.
 * `app` may be null where the emitting code has no context at hand (e.g. a deployment finishing in a
 * helper): the event and its deliveries depend on the transaction only.
 */
export async function emit(tx: Tx, app: AppContext | null, input: EmitInput): Promise<RecordedEvent> {
  const event: RecordedEvent = { id: newId(), type: input.type, companyId: input.companyId, data: input.data, createdAt: new Date().toISOString() };
  await tx.insertInto('events').values({ id: event.id, company_id: event.companyId, type: event.type, data: JSON.stringify(event.data), created_at: event.createdAt }).execute();
  for (const sink of sinks) await sink(tx, app, event);
  return event;
}

// ---- The mapping: operation -> event type -> payload ----------------------------------------

export interface EventSource<I = any> {
  type: EventType;
  /** The resource area that registered it (documentation). */
  module: string;
  /** operationIds of the v3 contract that lead to this event. */
  operations: readonly string[];
  /** When exactly the event is emitted (documentation), e.g. "when deletion completes". */
  when: string;
  /** Builds `data` from what the emitting code passes (usually the stored row), reading the transaction if needed. */
  payload(tx: Tx, input: I): Promise<Record<string, unknown>> | Record<string, unknown>;
}

const sources = new Map<EventType, EventSource>();

/** Declares an event type's source. One source per type; registering a type twice is a programming error. */
export function registerEventSource<I>(source: EventSource<I>): void {
  const prior = sources.get(source.type);
  if (prior && prior !== (source as EventSource)) throw new Error(`event type ${source.type} is already registered by ${prior.module}`);
  sources.set(source.type, source as EventSource);
}

/** The registered mapping, in EVENT_TYPES order. */
export function eventSources(): EventSource[] {
  return EVENT_TYPES.flatMap((t) => (sources.has(t) ? [sources.get(t)!] : []));
}

/** Emits `type` with the payload its registered source builds from `input`. */
export async function emitEvent<I>(tx: Tx, app: AppContext | null, type: EventType, companyId: string, input: I): Promise<RecordedEvent> {
  const source = sources.get(type);
  if (!source) throw new Error(`event type ${type} has no registered source`);
  return emit(tx, app, { type, companyId, data: await source.payload(tx, input) });
}
