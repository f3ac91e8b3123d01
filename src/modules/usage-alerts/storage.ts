// Tables of the usage alerts area. A config is a USD spending limit for the whole company
// (project_id null) or one project; `scope_key` (the project id, or '' for the company) makes
// "one company-wide config plus one per project" a unique index on both databases (NULLs would
// not collide). `emails` is a JSON array. Each trigger remembers the billing period (`YYYY-MM`,
// UTC) in which it last fired, so it fires at most once per period and is armed again next period.
// Also the migration and the queries the service runs on both tables.
import type { Kysely, Migration } from 'kysely';
import type { Tx } from '../../shared/db/index.js';
import type { Scope } from '../../shared/context.js';
import { paginate, type Page } from '../../shared/pagination.js';

export interface UsageAlertsTable {
  id: string;
  company_id: string;
  project_id: string | null;
  scope_key: string;
  limit_usd: number;
  /** JSON array of e-mail addresses. */
  emails: string;
  created_at: string;
  updated_at: string;
}

export interface UsageAlertTriggersTable {
  id: string;
  alert_id: string;
  percentage: number;
  /** Billing period (`YYYY-MM`) in which the trigger last fired; null = never. */
  fired_period: string | null;
  last_fired_at: string | null;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    usage_alerts: UsageAlertsTable;
    usage_alert_triggers: UsageAlertTriggersTable;
  }
}

export const migrations: Record<string, Migration> = {
  '071_usage_alerts': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('usage_alerts')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        // Deleting the project removes its alert config.
        .addColumn('project_id', 'varchar(36)', (c) => c.references('projects.id').onDelete('cascade'))
        .addColumn('scope_key', 'varchar(36)', (c) => c.notNull())
        .addColumn('limit_usd', 'double precision', (c) => c.notNull())
        .addColumn('emails', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('usage_alerts_company_scope').on('usage_alerts').columns(['company_id', 'scope_key']).unique().execute();
      await db.schema.createIndex('usage_alerts_company').on('usage_alerts').columns(['company_id', 'created_at', 'id']).execute();

      await db.schema
        .createTable('usage_alert_triggers')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('alert_id', 'varchar(36)', (c) => c.notNull().references('usage_alerts.id').onDelete('cascade'))
        .addColumn('percentage', 'integer', (c) => c.notNull())
        .addColumn('fired_period', 'varchar(7)')
        .addColumn('last_fired_at', 'varchar(32)')
        .execute();
      await db.schema.createIndex('usage_alert_triggers_alert').on('usage_alert_triggers').columns(['alert_id', 'percentage']).unique().execute();
    },
  },
};

/** Tables of this area, children first (for reset). */
export const tables = ['usage_alert_triggers', 'usage_alerts'] as const;

/** A page of a company's configs, only project `projectId`'s when given, limited to `scope` when given. */
export async function listAlertsPage(tx: Tx, companyId: string, projectId: string | undefined, scope: Scope, page: Page) {
  let q = tx.selectFrom('usage_alerts').selectAll().where('company_id', '=', companyId);
  if (projectId) q = q.where('project_id', '=', projectId);
  if (scope) q = q.where('id', 'in', scope.size ? [...scope] : ['']);
  return paginate(q, page);
}

export async function findAlert(tx: Tx, companyId: string, id: string): Promise<UsageAlertsTable | undefined> {
  return tx.selectFrom('usage_alerts').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
}

/**
 * Inserts a config unless its company and scope have one (the unique (company_id, scope_key) index
 * settles concurrent creations). Returns false when nothing was inserted.
 */
export async function insertAlertIfScopeFree(tx: Tx, row: UsageAlertsTable): Promise<boolean> {
  const inserted = await tx
    .insertInto('usage_alerts')
    .values(row)
    .onConflict((oc) => oc.columns(['company_id', 'scope_key']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function updateAlertColumns(tx: Tx, id: string, set: Partial<UsageAlertsTable>) {
  await tx.updateTable('usage_alerts').set(set).where('id', '=', id).execute();
}

/** Deletes a config and its triggers (the triggers first). */
export async function deleteAlertWithTriggers(tx: Tx, id: string) {
  await tx.deleteFrom('usage_alert_triggers').where('alert_id', '=', id).execute();
  await tx.deleteFrom('usage_alerts').where('id', '=', id).execute();
}

/** The triggers of the given configs (no query for none). */
export async function listTriggers(tx: Tx, alertIds: string[]): Promise<UsageAlertTriggersTable[]> {
  if (!alertIds.length) return [];
  return tx.selectFrom('usage_alert_triggers').selectAll().where('alert_id', 'in', alertIds).execute();
}

/** Inserts trigger rows (no query for none). */
export async function insertTriggerRows(tx: Tx, rows: UsageAlertTriggersTable[]) {
  if (rows.length) await tx.insertInto('usage_alert_triggers').values(rows).execute();
}

export async function deleteTriggersOf(tx: Tx, alertId: string) {
  await tx.deleteFrom('usage_alert_triggers').where('alert_id', '=', alertId).execute();
}

/** Records that the triggers `ids` fired in `period`, at `at`. */
export async function markTriggersFired(tx: Tx, ids: string[], period: string, at: string) {
  await tx.updateTable('usage_alert_triggers').set({ fired_period: period, last_fired_at: at }).where('id', 'in', ids).execute();
}
