// Table of the volumes area: an application's persistent volumes. A volume belongs to one
// application (app_id, removed with it) and is mounted into every process instance of it; its
// status is not stored (it follows the application, service.ts). `used_bytes` is what a runtime
// driver last measured, null until then. Also the migration and every query on the table.
import type { Kysely, Migration } from 'kysely';
import type { Tx } from '../../shared/db/index.js';
import { paginate, type Page } from '../../shared/pagination.js';
import { MOUNT_PATH_MAX, NAME_MAX } from './schemas.js';

export interface VolumesTable {
  id: string;
  app_id: string;
  company_id: string;
  name: string;
  mount_path: string;
  size_gb: number;
  used_bytes: number | null;
  created_at: string;
  updated_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    volumes: VolumesTable;
  }
}

export const migrations: Record<string, Migration> = {
  '210_volumes': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('volumes')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('app_id', 'varchar(36)', (c) => c.notNull().references('applications.id').onDelete('cascade'))
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('name', `varchar(${NAME_MAX})`, (c) => c.notNull())
        .addColumn('mount_path', `varchar(${MOUNT_PATH_MAX})`, (c) => c.notNull())
        .addColumn('size_gb', 'integer', (c) => c.notNull())
        .addColumn('used_bytes', 'bigint')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      // The service checks both under the application's lock (with clear messages); the indexes
      // make a bug there a failed write instead of two volumes on one path.
      await db.schema.createIndex('volumes_app_name').on('volumes').columns(['app_id', 'name']).unique().execute();
      await db.schema.createIndex('volumes_app_mount_path').on('volumes').columns(['app_id', 'mount_path']).unique().execute();
      await db.schema.createIndex('volumes_app_created').on('volumes').columns(['app_id', 'created_at', 'id']).execute();
    },
  },
};

/** Tables of this area, children first (for reset). */
export const tables = ['volumes'] as const;

export async function listVolumesPage(tx: Tx, appId: string, page: Page) {
  return paginate(tx.selectFrom('volumes').selectAll().where('app_id', '=', appId), page);
}

/** Every volume of the application, oldest first. */
export async function volumesOfApp(tx: Tx, appId: string): Promise<VolumesTable[]> {
  return tx.selectFrom('volumes').selectAll().where('app_id', '=', appId).orderBy('created_at').orderBy('id').execute();
}

export async function volumeRow(tx: Tx, appId: string, volumeId: string): Promise<VolumesTable | undefined> {
  return tx.selectFrom('volumes').selectAll().where('id', '=', volumeId).where('app_id', '=', appId).executeTakeFirst();
}

export async function insertVolume(tx: Tx, row: VolumesTable): Promise<void> {
  await tx.insertInto('volumes').values(row).execute();
}

export async function updateVolumeRow(tx: Tx, volumeId: string, set: Partial<Omit<VolumesTable, 'id'>>): Promise<VolumesTable> {
  return tx.updateTable('volumes').set(set).where('id', '=', volumeId).returningAll().executeTakeFirstOrThrow();
}

export async function deleteVolumeRow(tx: Tx, volumeId: string): Promise<void> {
  await tx.deleteFrom('volumes').where('id', '=', volumeId).execute();
}

export async function deleteAppVolumes(tx: Tx, appId: string): Promise<void> {
  await tx.deleteFrom('volumes').where('app_id', '=', appId).execute();
}

export async function setUsedBytes(tx: Tx, volumeId: string, usedBytes: number | null): Promise<void> {
  await tx.updateTable('volumes').set({ used_bytes: usedBytes }).where('id', '=', volumeId).execute();
}
