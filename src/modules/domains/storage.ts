// The one table of the domains area: every hostname served by the installation (system domains,
// custom domains, aliases and object storage CDN domains), whatever service owns it. A hostname appears
// at most once in the whole installation (unique index), so two companies can never both hold it.
// Its migrations, its locks, and every query the domain operations and the hostname registry run.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import type { DB } from '../../shared/db/schema.js';
import { paginate, type Page } from '../../shared/pagination.js';

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

/** The domains the API shows: aliases and CDN hostnames are the registry's own business. */
const LISTED = ['SYSTEM', 'CUSTOM'] as const;

// --- Locks ---------------------------------------------------------------------------------------

/** Serializes the writers of one hostname (the unique index backs it up). */
export const lockHostname = (tx: Tx, hostname: string) => lockFor(tx, `hostname:${hostname}`);

/** Serializes the domain writes of one service (limits, the one-primary rule). */
export const lockService = (tx: Tx, serviceId: string) => lockFor(tx, `domains:${serviceId}`);

// --- The hostname registry -----------------------------------------------------------------------

/**
 * Inserts `row` if its hostname is free in the whole installation. Writers of one hostname are
 * serialized by a lock, and the unique index (with ON CONFLICT DO NOTHING, so the transaction
 * survives) backs it up: a lost race is `false`, never an error.
 */
export async function insertIfFree(tx: Tx, row: DomainsTable): Promise<boolean> {
  await lockHostname(tx, row.hostname);
  const r = await tx
    .insertInto('domains')
    .values(row)
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0n) === 1;
}

/** Whether anybody holds `hostname`. */
export async function hostnameHeld(tx: Tx, hostname: string): Promise<boolean> {
  return !!(await tx.selectFrom('domains').select('id').where('hostname', '=', hostname).executeTakeFirst());
}

/** The service and company holding `hostname`, if any. */
export function holderOf(tx: Tx, hostname: string) {
  return tx.selectFrom('domains').select(['service_id', 'company_id']).where('hostname', '=', hostname).executeTakeFirst();
}

/** The company holding `hostname`, if any. */
export async function companyHolding(tx: Tx, hostname: string): Promise<string | undefined> {
  return (await tx.selectFrom('domains').select('company_id').where('hostname', '=', hostname).executeTakeFirst())?.company_id;
}

/** The service holding `hostname`, if any. */
export async function serviceHolding(tx: Tx, hostname: string): Promise<string | undefined> {
  return (await tx.selectFrom('domains').select('service_id').where('hostname', '=', hostname).executeTakeFirst())?.service_id;
}

/** Whether the service has its system domain. */
export async function hasSystemDomain(tx: Tx, serviceId: string): Promise<boolean> {
  return !!(await tx.selectFrom('domains').select('id').where('service_id', '=', serviceId).where('type', '=', 'SYSTEM').executeTakeFirst());
}

/** Whether the service has a primary domain. */
export async function hasPrimaryDomain(tx: Tx, serviceId: string): Promise<boolean> {
  return !!(await tx.selectFrom('domains').select('id').where('service_id', '=', serviceId).where('is_primary', '=', 1).executeTakeFirst());
}

/** Turns the service's alias `hostname` into its system domain; whether it had that alias. */
export async function aliasToSystem(tx: Tx, serviceId: string, hostname: string, isPrimary: number, at: string): Promise<boolean> {
  const r = await tx
    .updateTable('domains')
    .set({ type: 'SYSTEM', is_primary: isPrimary, updated_at: at })
    .where('hostname', '=', hostname)
    .where('service_id', '=', serviceId)
    .where('type', '=', 'ALIAS')
    .executeTakeFirst();
  return !!Number(r.numUpdatedRows);
}

/** The rows of the given services, and of the given hostnames whoever holds them. */
export function registeredOf(db: Kysely<DB>, serviceIds: string[], hostnames: string[]) {
  return db
    .selectFrom('domains')
    .select(['service_id', 'hostname', 'type'])
    .where((eb) => eb.or([eb('service_id', 'in', serviceIds), eb('hostname', 'in', hostnames)]))
    .execute();
}

/** Deletes every domain of a service. */
export async function deleteServiceDomains(tx: Tx, serviceId: string): Promise<void> {
  await tx.deleteFrom('domains').where('service_id', '=', serviceId).execute();
}

/** What the edge's routing reads of a registry row. */
export type RouteRow = Pick<DomainsTable, 'hostname' | 'service_id' | 'service_type' | 'type' | 'status' | 'is_enabled'>;

/** The registry rows of the given hostnames. */
export function routeRows(db: Kysely<DB>, hostnames: string[]): Promise<RouteRow[]> {
  return db
    .selectFrom('domains')
    .select(['hostname', 'service_id', 'service_type', 'type', 'status', 'is_enabled'])
    .where('hostname', 'in', hostnames)
    .execute();
}

/** Every registry row that may be served (the edge's whole table: aliases, enabled system and active custom domains), by hostname. */
export function servedRows(db: Kysely<DB>): Promise<(RouteRow & { company_id: string })[]> {
  return db
    .selectFrom('domains')
    .select(['hostname', 'service_id', 'service_type', 'type', 'status', 'is_enabled', 'company_id'])
    .where((eb) =>
      eb.or([
        eb('type', '=', 'ALIAS'),
        eb.and([eb('is_enabled', '=', 1), eb.or([eb('type', '=', 'SYSTEM'), eb.and([eb('type', '=', 'CUSTOM'), eb('status', '=', 'ACTIVE')])])]),
      ]),
    )
    .orderBy('hostname')
    .execute();
}

/** The registry rows that may go unserved (all but aliases): the edge's held hostnames are those `serving` refuses. */
export function heldCandidateRows(db: Kysely<DB>): Promise<RouteRow[]> {
  return db.selectFrom('domains').select(['hostname', 'service_id', 'service_type', 'type', 'status', 'is_enabled']).where('type', '!=', 'ALIAS').execute();
}

// --- Claimed (CDN) hostnames ---------------------------------------------------------------------

/** The hostnames the given services claimed (CDN rows). */
export function claimedRows(tx: Tx, serviceIds: readonly string[]) {
  return tx
    .selectFrom('domains')
    .select(['service_id', 'hostname'])
    .where('service_id', 'in', [...serviceIds])
    .where('type', '=', 'CDN')
    .execute();
}

/** The service that claimed `hostname` (a CDN row), if any. */
export async function claimantRow(tx: Tx, hostname: string): Promise<string | undefined> {
  return (await tx.selectFrom('domains').select('service_id').where('hostname', '=', hostname).where('type', '=', 'CDN').executeTakeFirst())?.service_id;
}

/** Deletes the service's claim on `hostname` (no-op when it holds none). */
export async function deleteClaim(tx: Tx, companyId: string, serviceId: string, hostname: string): Promise<void> {
  await tx
    .deleteFrom('domains')
    .where('hostname', '=', hostname)
    .where('service_id', '=', serviceId)
    .where('company_id', '=', companyId)
    .where('type', '=', 'CDN')
    .execute();
}

// --- Domains of a service ------------------------------------------------------------------------

/** A domain the API shows (system or custom) of the company's service, if any. */
export function findListedDomain(tx: Tx, companyId: string, serviceId: string, domainId: string): Promise<DomainsTable | undefined> {
  return tx
    .selectFrom('domains')
    .selectAll()
    .where('id', '=', domainId)
    .where('service_id', '=', serviceId)
    .where('company_id', '=', companyId)
    .where('type', 'in', LISTED)
    .executeTakeFirst();
}

/** A domain by id, if any. */
export function findDomainById(tx: Tx, id: string): Promise<DomainsTable | undefined> {
  return tx.selectFrom('domains').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Every domain of a service, oldest first. */
export function serviceDomains(tx: Tx, serviceId: string): Promise<DomainsTable[]> {
  return tx.selectFrom('domains').selectAll().where('service_id', '=', serviceId).orderBy('created_at').orderBy('id').execute();
}

/** A page of the domains the API shows of the company's service. */
export function listDomainsPage(tx: Tx, companyId: string, serviceId: string, page: Page) {
  return paginate(
    tx.selectFrom('domains').selectAll().where('service_id', '=', serviceId).where('company_id', '=', companyId).where('type', 'in', LISTED),
    page,
  );
}

/** The service's domains whose checks are pending (one domain's when `domainId` is given). */
export function pendingDomains(tx: Tx, serviceId: string, domainId?: string): Promise<DomainsTable[]> {
  let q = tx.selectFrom('domains').selectAll().where('service_id', '=', serviceId).where('status', 'in', ['VERIFICATION', 'POINTING']);
  if (domainId) q = q.where('id', '=', domainId);
  return q.execute();
}

/** The number of custom domains of a service. */
export async function countCustomDomains(tx: Tx, serviceId: string): Promise<number> {
  const count = await tx
    .selectFrom('domains')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('service_id', '=', serviceId)
    .where('type', '=', 'CUSTOM')
    .executeTakeFirst();
  return Number(count?.n ?? 0);
}

/** The oldest ACTIVE custom domain of a service, if any. */
export async function oldestActiveCustom(tx: Tx, serviceId: string): Promise<string | undefined> {
  const next = await tx
    .selectFrom('domains')
    .select('id')
    .where('service_id', '=', serviceId)
    .where('type', '=', 'CUSTOM')
    .where('status', '=', 'ACTIVE')
    .orderBy('created_at')
    .orderBy('id')
    .executeTakeFirst();
  return next?.id;
}

/**
 * Stores a verification step, only if the domain is still in the state it was read in (`from`):
 * whether it changed the row.
 */
export async function updateVerification(
  tx: Tx,
  d: Pick<DomainsTable, 'id' | 'status' | 'reads' | 'errors' | 'phase_started_at' | 'certificate' | 'updated_at'>,
  from: Pick<DomainsTable, 'status' | 'reads'>,
): Promise<boolean> {
  const { id, status, reads, errors, phase_started_at, certificate, updated_at } = d;
  const res = await tx
    .updateTable('domains')
    .set({ status, reads, errors, phase_started_at, certificate, updated_at })
    .where('id', '=', id)
    .where('status', '=', from.status)
    .where('reads', '=', from.reads)
    .executeTakeFirst();
  return !!Number(res.numUpdatedRows);
}

export async function renameDomain(tx: Tx, id: string, hostname: string, at: string): Promise<void> {
  await tx.updateTable('domains').set({ hostname, updated_at: at }).where('id', '=', id).execute();
}

export async function setPrimaryDomain(tx: Tx, id: string, at: string): Promise<void> {
  await tx.updateTable('domains').set({ is_primary: 1, updated_at: at }).where('id', '=', id).execute();
}

/** The service's system domain becomes primary, switched on. */
export async function systemDomainPrimary(tx: Tx, serviceId: string, at: string): Promise<void> {
  await tx
    .updateTable('domains')
    .set({ is_primary: 1, is_enabled: 1, updated_at: at })
    .where('service_id', '=', serviceId)
    .where('type', '=', 'SYSTEM')
    .execute();
}

/** The service's primary domain stops being primary. */
export async function clearPrimary(tx: Tx, serviceId: string, at: string): Promise<void> {
  await tx.updateTable('domains').set({ is_primary: 0, updated_at: at }).where('service_id', '=', serviceId).where('is_primary', '=', 1).execute();
}

export async function setDomainEnabled(tx: Tx, id: string, enabled: number, at: string): Promise<void> {
  await tx.updateTable('domains').set({ is_enabled: enabled, updated_at: at }).where('id', '=', id).execute();
}

export async function deleteDomainRow(tx: Tx, id: string): Promise<void> {
  await tx.deleteFrom('domains').where('id', '=', id).execute();
}
