// Tables of the environment variables area (app-level variables, company-wide (global) ones and
// static sites' variables), their migrations and the queries on them.
// `value` holds the sealed form produced by app.secrets (AES-256-GCM, `v1:iv:tag:data`), never
// the plaintext. Flags are 0/1 integers like every boolean of the schema.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Tx } from '../../shared/db/index.js';
import { all, reusable } from '../../shared/db/reusable.js';
import { paginate, type Page } from '../../shared/pagination.js';

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

// ---- Queries on any owner's variables ---------------------------------------------------------

/**
 * The variables of one owner: an application's `env_vars`, the company's `global_env_vars` or a
 * static site's `static_site_env_vars`, scoped by `column` = `id` (the scope of their unique keys).
 * The tables share the id/key/value/timestamp columns, so these queries serve all three.
 */
export interface VarScope {
  table: 'env_vars' | 'global_env_vars' | 'static_site_env_vars';
  column: 'app_id' | 'company_id' | 'static_site_id';
  id: string;
}

type Columns = Record<string, string | number | null>;

/** The tables differ only in their scope and flag columns; queries are written once against any of them. */
const untyped = (tx: Tx) => tx as unknown as Kysely<any>;

/** A variable of the owner, or undefined. */
export async function findVarRow(tx: Tx, o: VarScope, id: string): Promise<unknown> {
  return untyped(tx).selectFrom(o.table).selectAll().where('id', '=', id).where(o.column, '=', o.id).executeTakeFirst();
}

/** Inserts the row unless the owner has a variable with its key (the unique index decides); false when it has. */
export async function insertVarIfKeyFree(tx: Tx, o: VarScope, row: Columns): Promise<boolean> {
  const inserted = await untyped(tx)
    .insertInto(o.table)
    .values(row)
    .onConflict((oc) => oc.columns([o.column, 'key']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return !!inserted;
}

/** Sets columns of a variable (a taken key fails with the unique index's error). */
export async function updateVarRow(tx: Tx, o: VarScope, id: string, set: Columns): Promise<void> {
  await untyped(tx).updateTable(o.table).set(set).where('id', '=', id).execute();
}

/** Deletes a variable of the owner; false when it has none with that id. */
export async function deleteVarRow(tx: Tx, o: VarScope, id: string): Promise<boolean> {
  const res = await untyped(tx).deleteFrom(o.table).where('id', '=', id).where(o.column, '=', o.id).executeTakeFirst();
  return !!Number(res.numDeletedRows);
}

// ---- Lists, copies and removals ----------------------------------------------------------------

export async function listAppEnvVarsPage(tx: Tx, appId: string, page: Page) {
  return paginate(tx.selectFrom('env_vars').selectAll().where('app_id', '=', appId), page);
}

export async function listGlobalEnvVarsPage(tx: Tx, companyId: string, page: Page) {
  return paginate(tx.selectFrom('global_env_vars').selectAll().where('company_id', '=', companyId), page);
}

export async function listSiteEnvVarsPage(tx: Tx, siteId: string, page: Page) {
  return paginate(tx.selectFrom('static_site_env_vars').selectAll().where('static_site_id', '=', siteId), page);
}

/** The app-level variables of an application of the company, oldest first. */
export async function appEnvVarsInOrder(tx: Tx, appId: string, companyId: string): Promise<EnvVarsTable[]> {
  return tx.selectFrom('env_vars').selectAll().where('app_id', '=', appId).where('company_id', '=', companyId).orderBy('created_at').orderBy('id').execute();
}

/** Inserts app-level variables, 100 rows a statement. */
export async function insertEnvVars(tx: Tx, rows: EnvVarsTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 100)
    await tx
      .insertInto('env_vars')
      .values(rows.slice(i, i + 100))
      .execute();
}

/** Removes every app-level variable of an application. */
export async function deleteAppEnvVars(tx: Tx, appId: string): Promise<void> {
  await tx.deleteFrom('env_vars').where('app_id', '=', appId).execute();
}

/** Removes every variable of a static site. */
export async function deleteSiteEnvVars(tx: Tx, siteId: string): Promise<void> {
  await tx.deleteFrom('static_site_env_vars').where('static_site_id', '=', siteId).execute();
}

// ---- What deployments read ---------------------------------------------------------------------

const ENV_COLUMNS = ['key', 'value', 'is_runtime', 'is_buildtime', 'created_at', 'id'] as const;

const environmentRows = reusable((db, p: { companyId: string; appId: string }) =>
  db
    .selectFrom('global_env_vars')
    .select([sql<number>`0`.as('own'), ...ENV_COLUMNS])
    .where('company_id', '=', p.companyId)
    .unionAll(
      db
        .selectFrom('env_vars')
        .select([sql<number>`1`.as('own'), ...ENV_COLUMNS])
        .where('app_id', '=', p.appId)
        .where('company_id', '=', p.companyId),
    )
    .orderBy('own')
    .orderBy('created_at')
    .orderBy('id'),
);

/** The company's variables, then the application's own, each oldest first, in one statement. */
export async function environmentDefinitions(tx: Tx, companyId: string, appId: string) {
  return all(tx, environmentRows(tx, { companyId, appId }));
}

/** A static site's variables (key, sealed value, kind flags, branch), oldest first. */
export async function siteEnvDefinitions(
  tx: Tx,
  siteId: string,
  companyId: string,
): Promise<Pick<StaticSiteEnvVarsTable, 'key' | 'value' | 'is_production' | 'is_preview' | 'branch'>[]> {
  return tx
    .selectFrom('static_site_env_vars')
    .select(['key', 'value', 'is_production', 'is_preview', 'branch'])
    .where('static_site_id', '=', siteId)
    .where('company_id', '=', companyId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
