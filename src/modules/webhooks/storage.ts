// Tables of the webhooks area: the company's webhooks and the delivery attempts of events to them.
// The `events` table itself belongs to src/shared/events.ts; its migration ships with this module
// because the webhooks are what consume it.
import type { Kysely, Migration } from 'kysely';
import { eventMigrations, type EventType } from '../../shared/events.js';

export interface WebhooksTable {
  id: string;
  company_id: string;
  endpoint: string;
  description: string | null;
  /** JSON array of event types. */
  allowed_events: string;
  is_enabled: number;
  /** The signing secret (`whsec_...`), sealed with the server's secret box. */
  secret: string;
  /** The previous secret (sealed) while a roll-secret transition lasts. */
  old_secret: string | null;
  old_secret_expired_at: string | null;
  created_by: string;
  updated_by: string | null;
  created_at: string;
  updated_at: string;
}

export type DeliveryStatus = 'PENDING' | 'SUCCESS' | 'FAILED';

/**
 * One attempt to deliver one event to one webhook. The attempts of the same (event, webhook) form a
 * chain (`chain_id` = id of the first attempt); `status` is the chain's status, shared by its
 * attempts: PENDING until an attempt succeeds (SUCCESS) or the last retry failed (FAILED).
 */
export interface WebhookDeliveriesTable {
  id: string;
  chain_id: string;
  webhook_id: string;
  company_id: string;
  event_id: string;
  event_type: EventType;
  /** 1 for the first attempt, up to 13 (12 retries). */
  attempt: number;
  status: DeliveryStatus;
  endpoint: string;
  /** The exact request body sent (or to be sent). */
  payload: string;
  /** A bounded excerpt of the response body, or why nothing was received. */
  response: string | null;
  response_status: number | null;
  response_time_ms: number | null;
  /** When the attempt is due. */
  due_at: string;
  sent_at: string | null;
  created_at: string;
  updated_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    webhooks: WebhooksTable;
    webhook_deliveries: WebhookDeliveriesTable;
  }
}

export const migrations: Record<string, Migration> = {
  ...eventMigrations,
  '061_webhooks': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('webhooks')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('endpoint', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('allowed_events', 'text', (c) => c.notNull())
        .addColumn('is_enabled', 'integer', (c) => c.notNull())
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('old_secret', 'text')
        .addColumn('old_secret_expired_at', 'varchar(32)')
        .addColumn('created_by', 'varchar(64)', (c) => c.notNull())
        .addColumn('updated_by', 'varchar(64)')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('webhooks_company').on('webhooks').columns(['company_id', 'created_at', 'id']).execute();
      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('chain_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('webhook_id', 'varchar(36)', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('event_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('event_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('endpoint', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('response', 'text')
        .addColumn('response_status', 'integer')
        .addColumn('response_time_ms', 'integer')
        .addColumn('due_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('sent_at', 'varchar(32)')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('webhook_deliveries_list').on('webhook_deliveries').columns(['webhook_id', 'created_at', 'attempt', 'id']).execute();
      await db.schema.createIndex('webhook_deliveries_chain').on('webhook_deliveries').columns(['chain_id', 'attempt']).unique().execute();
    },
  },
};

/** Tables of this area, children first (for reset). */
export const tables = ['webhook_deliveries', 'webhooks', 'events'] as const;
