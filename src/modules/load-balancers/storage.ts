// Tables of the load balancers area (load balancers and their destinations), their migrations,
// locks, and every query the service and the edge run on them.
import type { Kysely, Migration } from 'kysely';
import type { Scope } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import type { DB } from '../../shared/db/schema.js';
import { insertNamed } from '../../shared/naming.js';
import { paginate, type Page } from '../../shared/pagination.js';
import type { DESTINATION_TYPES, LB_TYPES } from './schemas.js';

export type LoadBalancerType = (typeof LB_TYPES)[number];
export type DestinationType = (typeof DESTINATION_TYPES)[number];

export interface LoadBalancersTable {
  id: string;
  company_id: string;
  project_id: string | null;
  name: string;
  display_name: string;
  type: LoadBalancerType;
  created_at: string;
  updated_at: string;
}

export interface LoadBalancerDestinationsTable {
  id: string;
  load_balancer_id: string;
  company_id: string;
  service_type: DestinationType;
  /** The service routed to (null for EXTERNAL). */
  service_id: string | null;
  /** The target of an EXTERNAL destination (null otherwise). */
  url: string | null;
  is_enabled: number;
  weight: number;
  latitude: number | null;
  longitude: number | null;
  created_at: string;
  updated_at: string;
}

declare module '../../shared/db/schema.js' {
  interface DB {
    load_balancers: LoadBalancersTable;
    load_balancer_destinations: LoadBalancerDestinationsTable;
  }
}

export const migrations: Record<string, Migration> = {
  '140_load_balancers': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('load_balancers')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull().references('companies.id').onDelete('cascade'))
        .addColumn('project_id', 'varchar(36)')
        .addColumn('name', 'varchar(64)', (c) => c.notNull())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('load_balancers_company').on('load_balancers').columns(['company_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('load_balancers_name').on('load_balancers').columns(['company_id', 'name']).unique().execute();
      await db.schema
        .createTable('load_balancer_destinations')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('load_balancer_id', 'varchar(36)', (c) => c.notNull().references('load_balancers.id').onDelete('cascade'))
        .addColumn('company_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('service_type', 'varchar(16)', (c) => c.notNull())
        .addColumn('service_id', 'varchar(255)')
        .addColumn('url', 'text')
        .addColumn('is_enabled', 'integer', (c) => c.notNull())
        .addColumn('weight', 'integer', (c) => c.notNull())
        .addColumn('latitude', 'double precision')
        .addColumn('longitude', 'double precision')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('load_balancer_destinations_lb').on('load_balancer_destinations').columns(['load_balancer_id', 'created_at', 'id']).execute();
      // Who routes to a service (its deletion removes those destinations).
      await db.schema.createIndex('load_balancer_destinations_service').on('load_balancer_destinations').columns(['service_id']).execute();
    },
  },
};

/** Tables of this area, children first (for reset). */
export const tables = ['load_balancer_destinations', 'load_balancers'] as const;

// --- Load balancers ------------------------------------------------------------------------------

/** The company's load balancer, if any. */
export function findLoadBalancer(tx: Tx, companyId: string, id: string): Promise<LoadBalancersTable | undefined> {
  return tx.selectFrom('load_balancers').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
}

/**
 * Locks, in the order every writer takes them (so no two writers wait on each other in a circle):
 * 1. `lockLoadBalancer`: the changes of one load balancer (its destination count, its type);
 *    it reads the load balancer with the lock held;
 * 2. `lockRoutingGraph`: the company's load-balancer-to-load-balancer edges (cycle check), and
 *    the deletion of load balancers;
 * 3. `lockTarget`: the destinations pointing at one service (adding one vs. the service's removal).
 */
export async function lockLoadBalancer(tx: Tx, companyId: string, id: string): Promise<LoadBalancersTable | undefined> {
  await lockFor(tx, `load-balancer:${id}`);
  return findLoadBalancer(tx, companyId, id);
}
export const lockRoutingGraph = (tx: Tx, companyId: string) => lockFor(tx, `load-balancer-graph:${companyId}`);
export const lockTarget = (tx: Tx, serviceId: string) => lockFor(tx, `load-balancer-target:${serviceId}`);

/** A load balancer by id, whatever its company (the edge). */
export function loadBalancerById(db: Kysely<DB>, id: string): Promise<LoadBalancersTable | undefined> {
  return db.selectFrom('load_balancers').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A page of the company's load balancers (only `scope`'s when given), newest first. */
export function listLoadBalancersPage(tx: Tx, companyId: string, scope: Scope, page: Page) {
  let q = tx.selectFrom('load_balancers').selectAll().where('company_id', '=', companyId);
  if (scope) q = q.where('id', 'in', scope.size ? [...scope] : ['']);
  return paginate(q, page, { column: 'created_at', id: 'id', direction: 'desc' });
}

/** Inserts a load balancer under a name derived from its display name, unique in its company. */
export function insertLoadBalancer(tx: Tx, fields: Omit<LoadBalancersTable, 'name'>): Promise<LoadBalancersTable> {
  return insertNamed(tx, 'load_balancers', fields.company_id, fields.display_name, (name): LoadBalancersTable => ({ ...fields, name }));
}

export async function updateLoadBalancerRow(tx: Tx, id: string, patch: Partial<LoadBalancersTable>): Promise<void> {
  await tx.updateTable('load_balancers').set(patch).where('id', '=', id).execute();
}

export async function deleteLoadBalancerRow(tx: Tx, id: string): Promise<void> {
  await tx.deleteFrom('load_balancers').where('id', '=', id).execute();
}

/** The given load balancers of the company, as the service registry shows them. */
export function loadBalancerSummaryRows(tx: Tx, companyId: string, ids: readonly string[]) {
  return tx.selectFrom('load_balancers').select(['id', 'name', 'display_name']).where('id', 'in', ids).where('company_id', '=', companyId).execute();
}

/** Every load balancer of the installation, oldest first, as the domains registry needs them. */
export function allLoadBalancers(db: Kysely<DB>) {
  return db.selectFrom('load_balancers').select(['id', 'company_id', 'name']).orderBy('created_at').orderBy('id').execute();
}

/** The names of the given load balancers. */
export function loadBalancerNames(tx: Tx, ids: string[]) {
  return tx.selectFrom('load_balancers').select(['id', 'name']).where('id', 'in', ids).execute();
}

// --- Destinations --------------------------------------------------------------------------------

/** A page of a load balancer's destinations, oldest first. */
export function listDestinationsPage(tx: Tx, lbId: string, page: Page) {
  return paginate(tx.selectFrom('load_balancer_destinations').selectAll().where('load_balancer_id', '=', lbId), page);
}

/** A load balancer's enabled destinations, oldest first (the edge). */
export function enabledDestinations(db: Kysely<DB>, lbId: string): Promise<LoadBalancerDestinationsTable[]> {
  return db
    .selectFrom('load_balancer_destinations')
    .selectAll()
    .where('load_balancer_id', '=', lbId)
    .where('is_enabled', '=', 1)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** A destination of the load balancer, if any. */
export function findDestination(tx: Tx, lbId: string, destinationId: string): Promise<LoadBalancerDestinationsTable | undefined> {
  return tx.selectFrom('load_balancer_destinations').selectAll().where('id', '=', destinationId).where('load_balancer_id', '=', lbId).executeTakeFirst();
}

/** The number of destinations of a load balancer. */
export async function countDestinations(tx: Tx, lbId: string): Promise<number> {
  const count = await tx
    .selectFrom('load_balancer_destinations')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('load_balancer_id', '=', lbId)
    .executeTakeFirst();
  return Number(count?.n ?? 0);
}

/** The number of a load balancer's destinations without a location. */
export async function countUnlocatedDestinations(tx: Tx, lbId: string): Promise<number> {
  const missing = await tx
    .selectFrom('load_balancer_destinations')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('load_balancer_id', '=', lbId)
    .where((eb) => eb.or([eb('latitude', 'is', null), eb('longitude', 'is', null)]))
    .executeTakeFirst();
  return Number(missing?.n ?? 0);
}

/** The load balancer's destination routing to `url`, if any. */
export function destinationToUrl(tx: Tx, lbId: string, url: string) {
  return tx.selectFrom('load_balancer_destinations').select('id').where('load_balancer_id', '=', lbId).where('url', '=', url).executeTakeFirst();
}

/** The load balancer's destination routing to service `serviceId`, if any. */
export function destinationToService(tx: Tx, lbId: string, serviceId: string) {
  return tx.selectFrom('load_balancer_destinations').select('id').where('load_balancer_id', '=', lbId).where('service_id', '=', serviceId).executeTakeFirst();
}

/** The company's edges between load balancers that start at the given ones. */
export function loadBalancerEdges(tx: Tx, companyId: string, from: string[]) {
  return tx
    .selectFrom('load_balancer_destinations')
    .select(['load_balancer_id', 'service_id'])
    .where('company_id', '=', companyId)
    .where('service_type', '=', 'LOAD_BALANCER')
    .where('load_balancer_id', 'in', from)
    .execute();
}

export async function insertDestination(tx: Tx, row: LoadBalancerDestinationsTable): Promise<void> {
  await tx.insertInto('load_balancer_destinations').values(row).execute();
}

export async function setDestinationEnabled(tx: Tx, id: string, enabled: number, at: string): Promise<void> {
  await tx.updateTable('load_balancer_destinations').set({ is_enabled: enabled, updated_at: at }).where('id', '=', id).execute();
}

/** Weight, location and updated_at of a destination. */
export async function updateDestinationRow(
  tx: Tx,
  id: string,
  patch: Partial<Pick<LoadBalancerDestinationsTable, 'weight' | 'latitude' | 'longitude' | 'updated_at'>>,
): Promise<void> {
  await tx.updateTable('load_balancer_destinations').set(patch).where('id', '=', id).execute();
}

export async function deleteDestinationRow(tx: Tx, id: string): Promise<void> {
  await tx.deleteFrom('load_balancer_destinations').where('id', '=', id).execute();
}

/** Deletes every destination of a load balancer. */
export async function deleteDestinationsOf(tx: Tx, lbId: string): Promise<void> {
  await tx.deleteFrom('load_balancer_destinations').where('load_balancer_id', '=', lbId).execute();
}

/** Deletes every destination, of any load balancer, routing to service `serviceId`. */
export async function deleteDestinationsTo(tx: Tx, serviceId: string): Promise<void> {
  await tx.deleteFrom('load_balancer_destinations').where('service_id', '=', serviceId).execute();
}
