// Tables of an application's settings: one row of edge settings per application (maintenance
// mode, IP restriction, CDN, last cache purge; absent until first changed), its public TCP
// proxies and its private ports. Every row references the application with ON DELETE CASCADE,
// so deleting the application row (the deletion job) removes them.
import type { Kysely, Migration } from 'kysely';

export interface ApplicationSettingsTable {
  app_id: string;
  company_id: string;
  maintenance_enabled: number;
  maintenance_page_url: string | null;
  ip_type: 'allow' | 'deny';
  ip_enabled: number;
  /** JSON array of addresses / CIDR ranges. */
  ip_list: string;
  cdn_enabled: number;
  cache_purged_at: string | null;
  updated_at: string;
}

export interface ApplicationTcpProxiesTable {
  id: string;
  app_id: string;
  company_id: string;
  /** The application's cluster: external ports are unique per cluster. */
  cluster_id: string;
  process_id: string;
  port: number;
  external_port: number;
  hostname: string;
  status: 'creating' | 'ready' | 'failed' | 'deleting';
  created_at: string;
  updated_at: string;
}

export interface ApplicationPrivatePortsTable {
  id: string;
  app_id: string;
  company_id: string;
  process_id: string;
  port: number;
  status: 'creating' | 'ready' | 'failed' | 'deleting';
  created_at: string;
  updated_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    application_settings: ApplicationSettingsTable;
    application_tcp_proxies: ApplicationTcpProxiesTable;
    application_private_ports: ApplicationPrivatePortsTable;
  }
}

const appRef = (c: any) => c.notNull().references('applications.id').onDelete('cascade');

export const settingsMigrations: Record<string, Migration> = {
  '080_application_settings': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('application_settings')
        .addColumn('app_id', 'varchar(36)', (c) => appRef(c).primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('maintenance_enabled', 'integer', (c) => c.notNull())
        .addColumn('maintenance_page_url', 'text')
        .addColumn('ip_type', 'varchar(8)', (c) => c.notNull())
        .addColumn('ip_enabled', 'integer', (c) => c.notNull())
        .addColumn('ip_list', 'text', (c) => c.notNull())
        .addColumn('cdn_enabled', 'integer', (c) => c.notNull())
        .addColumn('cache_purged_at', 'varchar(32)')
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('application_tcp_proxies')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('app_id', 'varchar(36)', appRef)
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('cluster_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('process_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('port', 'integer', (c) => c.notNull())
        .addColumn('external_port', 'integer', (c) => c.notNull())
        .addColumn('hostname', 'text', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('application_tcp_proxies_app').on('application_tcp_proxies').columns(['app_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('application_tcp_proxies_port').on('application_tcp_proxies').columns(['app_id', 'process_id', 'port']).unique().execute();
      await db.schema.createIndex('application_tcp_proxies_external').on('application_tcp_proxies').columns(['cluster_id', 'external_port']).unique().execute();
      await db.schema
        .createTable('application_private_ports')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('app_id', 'varchar(36)', appRef)
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('process_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('port', 'integer', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('application_private_ports_app').on('application_private_ports').columns(['app_id', 'created_at', 'id']).execute();
      await db.schema
        .createIndex('application_private_ports_port')
        .on('application_private_ports')
        .columns(['app_id', 'process_id', 'port'])
        .unique()
        .execute();
    },
  },
};

/** Tables of the settings sub-area, children first (all are children of `applications`). */
export const settingsTables = ['application_tcp_proxies', 'application_private_ports', 'application_settings'] as const;
