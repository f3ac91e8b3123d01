// Events: how modules announce changes, and how they hear about each other's.
//
// Two kinds, both typed by declaration merging (the way `DB` is):
// - `EventMap`: the contract's webhook events (APP_CREATE, DATABASE_UPDATE, ...). A module declares
//   an entry (`type -> what the emitting code passes`) and registers its source in `setup()`:
//   when it is emitted and how its payload (`data`) is built. `emit(tx, type, companyId, input)`
//   records the event in `events` inside the caller's transaction (an outbox: the event exists if
//   and only if the change committed) and hands it, in the same transaction, to the sinks (the
//   webhooks module fans it out to one durable delivery per subscribed webhook).
// - `SignalMap`: moments of one module that others react to in the same transaction, never
//   recorded or delivered (e.g. `deployment.started`, which the processes module answers by
//   starting `beforeDeployment` jobs). `signal(tx, name, payload)` runs the listeners in
//   registration order; a listener's error aborts the transaction like any other.
//
// The bus lives on the AppContext (`app.events`); modules register in their `setup()`.
// docs/events.md describes every webhook event.
import type { Kysely, Migration } from 'kysely';
import type { Tx } from './db/index.js';
import { newId } from './ids.js';
import { later } from './db/postgres-client.js';
import { insertRows } from './db/reusable.js';
import { assertNotPure } from './purity.js';

/** Every webhook event type the contract defines (also the webhook subscription enum). */
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

/** Webhook event type -> the input its source builds the payload from. Filled by the modules. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface EventMap {}

/** In-transaction signal name -> payload. Filled by the modules that send them. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface SignalMap {}

export type EmittedType = keyof EventMap & EventType;
export type SignalName = keyof SignalMap & string;

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

/** Receives every recorded event inside the emitting transaction (e.g. webhook fan-out). */
export type EventSink = (tx: Tx, event: RecordedEvent) => Promise<void>;

export interface EventSource<T extends EmittedType = EmittedType> {
  type: T;
  /** The resource area that registered it (documentation). */
  module: string;
  /** operationIds of the v3 contract that lead to this event. */
  operations: readonly string[];
  /** When exactly the event is emitted (documentation), e.g. "when deletion completes". */
  when: string;
  /** Builds `data` from what the emitting code passes (usually the stored row), reading the transaction if needed. */
  payload(tx: Tx, input: EventMap[T]): Promise<Record<string, unknown>> | Record<string, unknown>;
}

export type SignalListener<K extends SignalName> = (tx: Tx, payload: SignalMap[K]) => Promise<void>;

export class EventBus {
  private readonly sources = new Map<EventType, EventSource>();
  private readonly sinks: EventSink[] = [];
  private readonly listeners = new Map<string, unknown[]>();

  /** Declares an event type's source. One source per type; registering a type twice is a programming error. */
  source<T extends EmittedType>(source: EventSource<T>): void {
    const prior = this.sources.get(source.type);
    if (prior) throw new Error(`event type ${source.type} is already registered by ${prior.module}`);
    this.sources.set(source.type, source as unknown as EventSource);
  }

  sink(sink: EventSink): void {
    this.sinks.push(sink);
  }

  /** Subscribes to a signal; listeners run in registration order inside the sender's transaction. */
  on<K extends SignalName>(name: K, listener: SignalListener<K>): void {
    const list = this.listeners.get(name) ?? [];
    list.push(listener);
    this.listeners.set(name, list);
  }

  /** The registered sources, in EVENT_TYPES order (documentation and tests). */
  registered(): EventSource[] {
    return EVENT_TYPES.flatMap((t) => (this.sources.has(t) ? [this.sources.get(t)!] : []));
  }

  /** Records `type` with the payload its source builds from `input`, and fans it out, in `tx`. */
  async emit<T extends EmittedType>(tx: Tx, type: T, companyId: string, input: EventMap[T]): Promise<RecordedEvent> {
    const source = this.sources.get(type) as unknown as EventSource<T> | undefined;
    if (!source) throw new Error(`event type ${type} has no registered source`);
    return this.record(tx, type, companyId, await source.payload(tx, input));
  }

  /** Records an event with a ready payload and fans it out, in `tx` (`emit` builds the payload first). */
  async record(tx: Tx, type: EventType, companyId: string, data: Record<string, unknown>): Promise<RecordedEvent> {
    assertNotPure(`emitted a ${type} event`);
    const event: RecordedEvent = { id: newId(), type, companyId, data, createdAt: new Date().toISOString() };
    await later(
      tx,
      insertRows(tx, 'events', [
        { id: event.id, company_id: event.companyId, type: event.type, data: JSON.stringify(event.data), created_at: event.createdAt },
      ]),
    );
    for (const sink of this.sinks) await sink(tx, event);
    return event;
  }

  /** Tells the listeners of `name`, in `tx`. */
  async signal<K extends SignalName>(tx: Tx, name: K, payload: SignalMap[K]): Promise<void> {
    assertNotPure(`signalled ${name}`);
    for (const listener of (this.listeners.get(name) ?? []) as SignalListener<K>[]) await listener(tx, payload);
  }
}
