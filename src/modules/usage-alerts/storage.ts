// Tables of the usage alerts area. A config is a USD spending limit for the whole company
// (project_id null) or one project; `scope_key` (the project id, or '' for the company) makes
// "one company-wide config plus one per project" a unique index on both databases (NULLs would
// not collide). `emails` is a JSON array. Each trigger remembers the billing period (`YYYY-MM`,
// UTC) in which it last fired, so it fires at most once per period and is armed again next period.
import type { Kysely, Migration } from 'kysely';

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
