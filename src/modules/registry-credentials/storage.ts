// Table of the registry credentials area: a company's Docker registry logins. `secret` holds the
// sealed form produced by app.secrets (AES-256-GCM, `v1:iv:tag:data`), never the plaintext, and is
// never returned by the API. Also its migration and the queries the service runs on it.
import type { Kysely, Migration } from 'kysely';
import type { Tx } from '../../shared/db/index.js';
import type { Scope } from '../../shared/context.js';
import { paginate, type Page } from '../../shared/pagination.js';

export interface DockerRegistriesTable {
  id: string;
  company_id: string;
  name: string;
  registry: string;
  username: string;
  /** Sealed with app.secrets. */
  secret: string;
  created_at: string;
  updated_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    docker_registries: DockerRegistriesTable;
  }
}

export const migrations: Record<string, Migration> = {
  '070_registry_credentials': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('docker_registries')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('name', 'varchar(255)', (c) => c.notNull())
        .addColumn('registry', 'varchar(32)', (c) => c.notNull())
        .addColumn('username', 'varchar(64)', (c) => c.notNull())
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('docker_registries_company').on('docker_registries').columns(['company_id', 'created_at', 'id']).execute();
    },
  },
};

/** Tables of this area, children first (for reset). */
export const tables = ['docker_registries'] as const;

/** A page of a company's credentials (without their secrets), limited to `scope` when given. */
export async function listRegistriesPage(tx: Tx, companyId: string, scope: Scope, page: Page) {
  let q = tx.selectFrom('docker_registries').select(['id', 'name', 'registry', 'username', 'created_at', 'updated_at']).where('company_id', '=', companyId);
  if (scope) q = q.where('id', 'in', scope.size ? [...scope] : ['']);
  return paginate(q, page);
}

export async function findRegistry(tx: Tx, companyId: string, id: string): Promise<DockerRegistriesTable | undefined> {
  return tx.selectFrom('docker_registries').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
}

/** The id and names of a company's credential (undefined when it has none by that id). */
export async function findRegistrySummary(tx: Tx, companyId: string, id: string) {
  return tx
    .selectFrom('docker_registries')
    .select(['id', 'name', 'name as display_name'])
    .where('id', '=', id)
    .where('company_id', '=', companyId)
    .executeTakeFirst();
}

export async function insertRegistry(tx: Tx, row: DockerRegistriesTable) {
  await tx.insertInto('docker_registries').values(row).execute();
}

export async function updateRegistryColumns(tx: Tx, id: string, set: Partial<DockerRegistriesTable>) {
  await tx.updateTable('docker_registries').set(set).where('id', '=', id).execute();
}

export async function deleteRegistryRow(tx: Tx, id: string) {
  await tx.deleteFrom('docker_registries').where('id', '=', id).execute();
}
