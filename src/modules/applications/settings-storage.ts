// Tables of an application's settings: one row of edge settings per application (maintenance
// mode, IP restriction, CDN, last cache purge; absent until first changed), its public TCP
// proxies and its private ports. Every row references the application with ON DELETE CASCADE,
// so deleting the application row (the deletion job) removes them. Also their migration and the
// queries settings.ts runs on them.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { paginate, type Page } from '../../shared/pagination.js';

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

// --- Edge settings row -------------------------------------------------------------------------

/** The application's settings row (undefined until first changed). */
export async function findSettings(tx: Tx, appId: string): Promise<ApplicationSettingsTable | undefined> {
  return tx.selectFrom('application_settings').selectAll().where('app_id', '=', appId).executeTakeFirst();
}

export type SettingsChanges = Partial<Omit<ApplicationSettingsTable, 'app_id' | 'company_id' | 'updated_at'>>;

/**
 * Inserts `row` or, when the application has its row already, writes `set` and `row.updated_at`
 * to it (only those columns); answers the row as written.
 */
function upsert(tx: Tx, row: ApplicationSettingsTable, set: Record<string, unknown>) {
  return tx
    .insertInto('application_settings')
    .values(row)
    .onConflict((oc) => oc.column('app_id').doUpdateSet({ ...set, updated_at: row.updated_at }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Inserts `row`, or writes the columns of `changes` (and `updated_at`) to the existing row; the row as written. */
export function upsertSettings(tx: Tx, row: ApplicationSettingsTable, changes: SettingsChanges): Promise<ApplicationSettingsTable> {
  return upsert(tx, row, changes);
}

/** Inserts `row`, or flips `cdn_enabled` of the existing row in the statement (not from a value read before); the row as written. */
export function upsertSettingsFlippingCdn(tx: Tx, row: ApplicationSettingsTable): Promise<ApplicationSettingsTable> {
  return upsert(tx, row, { cdn_enabled: sql<number>`1 - application_settings.cdn_enabled` });
}

// --- TCP proxies and private ports -------------------------------------------------------------

/** A page of the application's TCP proxies. */
export function listTcpProxiesPage(tx: Tx, appId: string, page: Page) {
  return paginate(
    tx
      .selectFrom('application_tcp_proxies')
      .select(['id', 'app_id', 'process_id', 'port', 'external_port', 'hostname', 'status', 'created_at', 'updated_at'])
      .where('app_id', '=', appId),
    page,
  );
}

/** A page of the application's private ports. */
export function listPrivatePortsPage(tx: Tx, appId: string, page: Page) {
  return paginate(
    tx.selectFrom('application_private_ports').select(['id', 'app_id', 'process_id', 'port', 'status', 'created_at', 'updated_at']).where('app_id', '=', appId),
    page,
  );
}

/** The row of `table` (a TCP proxy, or a private port) for the process's port, if any. */
export async function findPortRow(
  tx: Tx,
  table: 'application_tcp_proxies' | 'application_private_ports',
  appId: string,
  processId: string,
  port: number,
): Promise<{ id: string } | undefined> {
  return tx.selectFrom(table).select('id').where('app_id', '=', appId).where('process_id', '=', processId).where('port', '=', port).executeTakeFirst();
}

/** External ports are allocated per cluster: the writers of one cluster's TCP proxies take turns. */
export async function lockClusterTcpProxies(tx: Tx, clusterId: string): Promise<void> {
  await lockFor(tx, `tcp-proxies:${clusterId}`);
}

/** The external ports the cluster's TCP proxies use. */
export async function usedExternalPorts(tx: Tx, clusterId: string): Promise<number[]> {
  return (await tx.selectFrom('application_tcp_proxies').select('external_port').where('cluster_id', '=', clusterId).execute()).map((r) => r.external_port);
}

export async function insertTcpProxy(tx: Tx, row: ApplicationTcpProxiesTable): Promise<void> {
  await tx.insertInto('application_tcp_proxies').values(row).execute();
}

/** Deletes the application's TCP proxy `proxyId`; false when it has none by that id. */
export async function deleteTcpProxyRow(tx: Tx, appId: string, proxyId: string): Promise<boolean> {
  const r = await tx.deleteFrom('application_tcp_proxies').where('id', '=', proxyId).where('app_id', '=', appId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** The writers of one application's private ports take turns. */
export async function lockPrivatePorts(tx: Tx, appId: string): Promise<void> {
  await lockFor(tx, `private-ports:${appId}`);
}

export async function insertPrivatePort(tx: Tx, row: ApplicationPrivatePortsTable): Promise<void> {
  await tx.insertInto('application_private_ports').values(row).execute();
}

/** Deletes the application's private port `portId`; false when it has none by that id. */
export async function deletePrivatePortRow(tx: Tx, appId: string, portId: string): Promise<boolean> {
  const r = await tx.deleteFrom('application_private_ports').where('id', '=', portId).where('app_id', '=', appId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
