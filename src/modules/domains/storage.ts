// The one table of the domains area: every hostname served by the installation (system domains,
// custom domains, aliases and object storage CDN domains), whatever service owns it. A hostname appears
// at most once in the whole installation (unique index), so two companies can never both hold it.
import { sql, type Kysely, type Migration } from 'kysely';

/** Service types that own domains (the contract's service type names). */
export type OwnerType = 'app' | 'static-site' | 'load-balancer' | 'object-storage';
/** ALIAS: a further name the system assigned (a short name, a static site's hostname); never listed by the API. */
export type DomainType = 'SYSTEM' | 'CUSTOM' | 'CDN' | 'ALIAS';
export type DomainStatus = 'VERIFICATION' | 'POINTING' | 'ACTIVE' | 'TIMED_OUT';
/** TLS certificate of the hostname: follows verification (`pending` -> `issued`), or the user's own. */
export type CertificateStatus = 'pending' | 'issued' | 'custom';

export interface DomainsTable {
  id: string;
  company_id: string;
  service_id: string;
  service_type: OwnerType;
  /** Lower-case ASCII (punycode) hostname; a wildcard is stored as `*.<base>`. Unique installation-wide. */
  hostname: string;
  type: DomainType;
  status: DomainStatus;
  is_enabled: number;
  is_wildcard: number;
  is_primary: number;
  /** Value of the ownership TXT record a custom domain needs. */
  verification_token: string | null;
  /** When the current verification phase began, and the refreshes since (reads progression). */
  phase_started_at: string | null;
  reads: number;
  /** JSON list of `{type, message}` problems found by the last check; null when none. */
  errors: string | null;
  certificate: CertificateStatus;
  custom_cert: string | null;
  /** Encrypted with the server's secret box; never returned. */
  custom_key_enc: string | null;
  created_at: string;
  updated_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    domains: DomainsTable;
  }
}

export const migrations: Record<string, Migration> = {
  '110_domains': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('domains')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('service_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('service_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('hostname', 'varchar(255)', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('is_enabled', 'integer', (c) => c.notNull())
        .addColumn('is_wildcard', 'integer', (c) => c.notNull())
        .addColumn('is_primary', 'integer', (c) => c.notNull())
        .addColumn('verification_token', 'varchar(64)')
        .addColumn('phase_started_at', 'varchar(32)')
        .addColumn('reads', 'integer', (c) => c.notNull())
        .addColumn('errors', 'text')
        .addColumn('certificate', 'varchar(16)', (c) => c.notNull())
        .addColumn('custom_cert', 'text')
        .addColumn('custom_key_enc', 'text')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('domains_hostname').on('domains').column('hostname').unique().execute();
      await db.schema.createIndex('domains_service').on('domains').columns(['service_id', 'created_at', 'id']).execute();
      // At most one primary and one system domain per service, whatever races.
      await db.schema
        .createIndex('domains_one_primary')
        .on('domains')
        .column('service_id')
        .unique()
        .where(sql<boolean>`is_primary = 1`)
        .execute();
      await db.schema
        .createIndex('domains_one_system')
        .on('domains')
        .column('service_id')
        .unique()
        .where(sql<boolean>`type = 'SYSTEM'`)
        .execute();
    },
  },
};

export const tables = ['domains'] as const;
