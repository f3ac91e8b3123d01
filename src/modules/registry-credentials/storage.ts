// Table of the registry credentials area: a company's Docker registry logins. `secret` holds the
// sealed form produced by app.secrets (AES-256-GCM, `v1:iv:tag:data`), never the plaintext, and is
// never returned by the API.
import type { Kysely, Migration } from 'kysely';

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
