// Tables of the load balancers area: load balancers and their destinations.
import type { Kysely, Migration } from 'kysely';
import type { CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { lockFor } from '../../shared/db/locks.js';
import { notFound } from '../../shared/errors.js';
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

export async function findLoadBalancer({ tx, companyId }: CallContext, id: string): Promise<LoadBalancersTable> {
  const lb = await tx.selectFrom('load_balancers').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
  if (!lb) throw notFound('Load balancer');
  return lb;
}

/**
 * Locks, in the order every writer takes them (so no two writers wait on each other in a circle):
 * 1. `lockLoadBalancer`: the changes of one load balancer (its destination count, its type);
 * 2. `lockRoutingGraph`: the company's load-balancer-to-load-balancer edges (cycle check), and
 *    the deletion of load balancers;
 * 3. `lockTarget`: the destinations pointing at one service (adding one vs. the service's removal).
 */
export async function lockLoadBalancer(ctx: CallContext, id: string): Promise<LoadBalancersTable> {
  await lockFor(ctx.tx, `load-balancer:${id}`);
  return findLoadBalancer(ctx, id);
}
export const lockRoutingGraph = (tx: Tx, companyId: string) => lockFor(tx, `load-balancer-graph:${companyId}`);
export const lockTarget = (tx: Tx, serviceId: string) => lockFor(tx, `load-balancer-target:${serviceId}`);
