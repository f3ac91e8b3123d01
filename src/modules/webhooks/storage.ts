// Tables of the webhooks area: the company's webhooks and the delivery attempts of events to them.
// The `events` table itself belongs to src/shared/events.ts; its migration ships with this module
// because the webhooks are what consume it. Also the queries of the service and of delivery, and
// the lock that orders a webhook's deletion against the recording of its attempts.
import { sql, type Kysely, type Migration } from 'kysely';
import { batchedPerKey } from '../../shared/coalesce.js';
import type { Scope } from '../../shared/context.js';
import { later, type Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { all, insertRows, reusable } from '../../shared/db/reusable.js';
import { eventMigrations, type EventType } from '../../shared/events.js';
import type { Page } from '../../shared/pagination.js';

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

// ---- Webhooks ---------------------------------------------------------------------------------

export async function findWebhook(tx: Tx, companyId: string, id: string): Promise<WebhooksTable | undefined> {
  return tx.selectFrom('webhooks').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
}

/** A page of a company's webhooks (limited to `scope` when given) and the count of all of them (two queries). */
export async function listWebhooksPage(tx: Tx, companyId: string, scope: Scope, page: Page): Promise<{ count: number; rows: WebhooksTable[] }> {
  let q = tx.selectFrom('webhooks').where('company_id', '=', companyId);
  if (scope) q = q.where('id', 'in', scope.size ? [...scope] : ['']);
  const n = await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst();
  const rows = await q.selectAll().orderBy('created_at').orderBy('id').limit(page.limit).offset(page.offset).execute();
  return { count: Number(n?.n ?? 0), rows };
}

export async function countWebhooks(tx: Tx, companyId: string): Promise<number> {
  const n = await tx
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('company_id', '=', companyId)
    .executeTakeFirst();
  return Number(n?.n ?? 0);
}

export async function insertWebhook(tx: Tx, row: WebhooksTable) {
  await tx.insertInto('webhooks').values(row).execute();
}

export async function updateWebhookColumns(tx: Tx, id: string, set: Partial<WebhooksTable>) {
  await tx.updateTable('webhooks').set(set).where('id', '=', id).execute();
}

/** Deletes a webhook and its delivery history (the attempts first). */
export async function deleteWebhookWithDeliveries(tx: Tx, id: string) {
  await tx.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute();
  await tx.deleteFrom('webhooks').where('id', '=', id).execute();
}

const enabledHooks = reusable((db, p: { companyId: string }) =>
  db.selectFrom('webhooks').select(['id', 'endpoint', 'allowed_events']).where('company_id', '=', p.companyId).where('is_enabled', '=', 1),
);

/** The company's enabled webhooks (what an event fans out to). */
export async function listEnabledWebhooks(tx: Tx, companyId: string) {
  return all(tx, enabledHooks(tx, { companyId }));
}

// ---- The deletion lock ------------------------------------------------------------------------

/**
 * The lock that orders a webhook's deletion against the recording of its attempts (PostgreSQL):
 * the recording transactions hold it shared, before they touch an attempt, and a deletion
 * exclusively, before it touches anything. Without it a deletion (removing the attempts in the
 * table's order) and a burst's record (updating them in its own order) could each wait for a row
 * the other holds: a deadlock, and a 500 for the deletion.
 */
const webhookLock = (webhookId: string) => `webhook:${webhookId}`;

/** Holds a webhook's lock exclusively (its deletion), before any job or attempt row is touched. */
export async function lockWebhookForDeletion(tx: Tx, webhookId: string): Promise<void> {
  await lockFor(tx, webhookLock(webhookId));
}

/** Holds the locks of these webhooks shared, in one order (see webhookLock). */
export async function lockWebhooksShared(tx: Tx, webhookIds: Iterable<string>): Promise<void> {
  for (const id of [...new Set(webhookIds)].sort()) await lockFor(tx, webhookLock(id), 'shared');
}

// ---- Delivery attempts ------------------------------------------------------------------------

/** A page of a webhook's attempts, newest first, and the count of all of them (two queries). */
export async function listDeliveriesPage(tx: Tx, webhookId: string, page: Page): Promise<{ count: number; rows: WebhookDeliveriesTable[] }> {
  const q = tx.selectFrom('webhook_deliveries').where('webhook_id', '=', webhookId);
  const n = await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst();
  const rows = await q
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('attempt', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return { count: Number(n?.n ?? 0), rows };
}

export async function findDelivery(tx: Tx, webhookId: string, id: string): Promise<WebhookDeliveriesTable | undefined> {
  return tx.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).where('webhook_id', '=', webhookId).executeTakeFirst();
}

/** Inserts a chain's first attempt with the transaction's next statement (`later`). */
export async function insertFirstAttempt(tx: Tx, row: WebhookDeliveriesTable): Promise<void> {
  await later(tx, insertRows(tx, 'webhook_deliveries', [row]));
}

export async function insertAttempt(tx: Tx, row: WebhookDeliveriesTable): Promise<void> {
  await tx.insertInto('webhook_deliveries').values(row).execute();
}

/** Attempts with their webhook (the webhook's columns under w_ names). */
export function readAttemptsWithWebhook(db: Tx, ids: string[]) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .selectAll('d')
    .select(['w.endpoint as w_endpoint', 'w.is_enabled as w_is_enabled', 'w.secret as w_secret', 'w.old_secret as w_old_secret'])
    .select('w.old_secret_expired_at as w_old_secret_expired_at')
    .where('d.id', 'in', ids)
    .execute();
}

export type AttemptWithWebhook = Awaited<ReturnType<typeof readAttemptsWithWebhook>>[number];

/** The attempt of chain `chainId` numbered `attempt`. */
export async function findAttempt(db: Tx, chainId: string, attempt: number): Promise<WebhookDeliveriesTable | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll().where('chain_id', '=', chainId).where('attempt', '=', attempt).executeTakeFirst();
}

/** Sets the status of every attempt of a chain. */
export async function settleChain(tx: Tx, chainId: string, status: 'SUCCESS' | 'FAILED', now: string) {
  await tx.updateTable('webhook_deliveries').set({ status, updated_at: now }).where('chain_id', '=', chainId).execute();
}

/** Records why an attempt was not sent (its response), leaving `sent_at` unset. */
export async function markAttemptNotSent(tx: Tx, id: string, response: string, now: string) {
  await tx.updateTable('webhook_deliveries').set({ response, updated_at: now }).where('id', '=', id).execute();
}

/** What an attempt's record writes to its row (`status`: a first attempt's outcome settles its chain); `webhook_id` is not written, only locked. */
export interface Sent {
  id: string;
  webhook_id: string;
  endpoint: string;
  sent_at: string;
  response_status: number | null;
  response: string | null;
  response_time_ms: number | null;
  updated_at: string;
  status: 'SUCCESS' | 'FAILED' | null;
}

/**
 * Records attempts as sent, unless deleted or recorded already (`sent_at` set); resolves to
 * whether the row was written. The attempts recorded in one transaction at once (a burst of
 * deliveries completed together) are written by one statement, under their webhooks' shared locks.
 */
export const recordSent = batchedPerKey<Tx, Sent, boolean>(async (tx, items) => {
  await lockWebhooksShared(
    tx,
    items.map((s) => s.webhook_id),
  );
  // VALUES columns are column1, column2, ... on both SQLite and PostgreSQL (untyped there: text).
  const rows = items.map(
    (s) => sql`(${s.id}, ${s.endpoint}, ${s.sent_at}, ${s.response_status}, ${s.response}, ${s.response_time_ms}, ${s.updated_at}, ${s.status})`,
  );
  const written = await sql<{ id: string }>`
    UPDATE webhook_deliveries SET endpoint = v.column2, sent_at = v.column3, response_status = CAST(v.column4 AS integer),
      response = v.column5, response_time_ms = CAST(v.column6 AS integer), updated_at = v.column7,
      status = COALESCE(v.column8, webhook_deliveries.status)
    FROM (VALUES ${sql.join(rows)}) AS v
    WHERE webhook_deliveries.id = v.column1 AND webhook_deliveries.sent_at IS NULL
    RETURNING webhook_deliveries.id`.execute(tx);
  const ids = new Set(written.rows.map((r) => r.id));
  return items.map((s) => ids.has(s.id));
});
