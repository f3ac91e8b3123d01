// Tables of the environment variables area: app-level variables, company-wide (global) ones and
// static sites' variables.
// `value` holds the sealed form produced by app.secrets (AES-256-GCM, `v1:iv:tag:data`), never
// the plaintext. Flags are 0/1 integers like every boolean of the schema.
import type { Kysely, Migration } from 'kysely';

export interface EnvVarsTable {
  id: string;
  company_id: string;
  app_id: string;
  key: string;
  /** Sealed with app.secrets. */
  value: string;
  is_runtime: number;
  is_buildtime: number;
  created_at: string;
  updated_at: string;
}

export interface GlobalEnvVarsTable {
  id: string;
  company_id: string;
  key: string;
  /** Sealed with app.secrets. */
  value: string;
  is_runtime: number;
  is_buildtime: number;
  created_at: string;
  updated_at: string;
}

/** A static site's variable: used by production and/or preview builds, optionally of one branch only. */
export interface StaticSiteEnvVarsTable {
  id: string;
  company_id: string;
  static_site_id: string;
  key: string;
  /** Sealed with app.secrets. */
  value: string;
  is_production: number;
  is_preview: number;
  /** Only builds of this branch use it; null = every branch. */
  branch: string | null;
  created_at: string;
  updated_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    env_vars: EnvVarsTable;
    global_env_vars: GlobalEnvVarsTable;
    static_site_env_vars: StaticSiteEnvVarsTable;
  }
}

export const migrations: Record<string, Migration> = {
  '030_env_vars': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('env_vars')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        // Deleting an application removes its variables even if a code path forgets deleteAppEnvVars.
        .addColumn('app_id', 'varchar(36)', (c) => c.notNull().references('applications.id').onDelete('cascade'))
        .addColumn('key', 'varchar(255)', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('is_runtime', 'integer', (c) => c.notNull())
        .addColumn('is_buildtime', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      // Keys are unique per application (exact, case-sensitive match, like the process environment).
      await db.schema.createIndex('env_vars_app_key').on('env_vars').columns(['app_id', 'key']).unique().execute();
      await db.schema.createIndex('env_vars_app').on('env_vars').columns(['app_id', 'created_at', 'id']).execute();

      await db.schema
        .createTable('global_env_vars')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('key', 'varchar(255)', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('is_runtime', 'integer', (c) => c.notNull())
        .addColumn('is_buildtime', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('global_env_vars_company_key').on('global_env_vars').columns(['company_id', 'key']).unique().execute();
      await db.schema.createIndex('global_env_vars_company').on('global_env_vars').columns(['company_id', 'created_at', 'id']).execute();
    },
  },
  '102_env_vars_static_sites': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('static_site_env_vars')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('static_site_id', 'varchar(36)', (c) => c.notNull().references('static_sites.id').onDelete('cascade'))
        .addColumn('key', 'varchar(255)', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('is_production', 'integer', (c) => c.notNull())
        .addColumn('is_preview', 'integer', (c) => c.notNull())
        .addColumn('branch', 'text')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      // A key is unique per static site (whatever its flags and branch).
      await db.schema.createIndex('static_site_env_vars_site_key').on('static_site_env_vars').columns(['static_site_id', 'key']).unique().execute();
      await db.schema.createIndex('static_site_env_vars_site').on('static_site_env_vars').columns(['static_site_id', 'created_at', 'id']).execute();
    },
  },
};

/** Tables of this area, children first (for reset). None references another. */
export const tables = ['static_site_env_vars', 'env_vars', 'global_env_vars'] as const;
