// Helpers of the load balancer suites: creating load balancers and destinations, paths, keys.
import assert from 'node:assert/strict';
import { GENEROUS, type TestServer } from '../helpers/server.js';
import { expectStatus, listAll, uniqueName } from '../helpers/util.js';

// Applications as destinations, and stand-in service kinds for those not built yet.
export { createApp, stubKind } from '../domains/support.js';

/** Every tier generous, each with its own limit so the tier an operation counts in shows in x-ratelimit-limit. */
export const LIMITS = { ...GENEROUS, service_creation: 5001, service_mutation: 7001, read: 100_003 };
/** Application deletions finish at once (the `application.removed` signal). */
export const ENV = { SLIPWAY_SIM_PROGRESSION: 'deployment=immediate,app_delete=immediate' };

export const LB_KEYS = ['company_id', 'created_at', 'display_name', 'id', 'name', 'project_id', 'type', 'updated_at'];
export const DESTINATION_KEYS = ['created_at', 'id', 'is_enabled', 'latitude', 'longitude', 'service_id', 'service_type', 'updated_at', 'url', 'weight'];

export interface LoadBalancer {
  id: string;
  company_id: string;
  project_id: string | null;
  display_name: string;
  name: string;
  type: 'DEFAULT' | 'GEO';
  created_at: string;
  updated_at: string;
}

export interface Destination {
  id: string;
  service_id: string | null;
  service_type: 'APP' | 'STATIC_SITE' | 'OBJECT_STORAGE' | 'EXTERNAL' | 'LOAD_BALANCER';
  is_enabled: boolean;
  weight: number | null;
  url: string | null;
  latitude: number | null;
  longitude: number | null;
  created_at: string;
  updated_at: string;
}

let counter = 0;
/** An external URL nobody else in the run uses. */
export const externalUrl = () => `https://backend-${process.pid}-${++counter}.example.com/`;

export const lbPath = (id: string) => `/load-balancers/${id}`;
export const destinationsPath = (id: string) => `${lbPath(id)}/destinations`;
export const destinationPath = (id: string, destinationId: string) => `${destinationsPath(id)}/${destinationId}`;

export async function createLb(s: TestServer, body: Record<string, unknown> = {}, token?: string): Promise<LoadBalancer> {
  return expectStatus(await s.post('/load-balancers', { display_name: uniqueName('LB'), ...body }, { token }), 201);
}

export async function addDestination(s: TestServer, lbId: string, body: Record<string, unknown>, token?: string): Promise<Destination> {
  const d = expectStatus(await s.post(destinationsPath(lbId), body, { token }), 201) as Destination;
  assert.deepEqual(Object.keys(d).sort(), DESTINATION_KEYS);
  return d;
}

export const external = (s: TestServer, lbId: string, extra: Record<string, unknown> = {}) =>
  addDestination(s, lbId, { service_type: 'EXTERNAL', url: externalUrl(), ...extra });

export const destinations = (s: TestServer, lbId: string, token?: string) => listAll<Destination>(s, destinationsPath(lbId), token);

/** Destination rows (any load balancer) that route to `serviceId`, straight from the database. */
export async function routesTo(s: TestServer, serviceId: string): Promise<number> {
  const r = await s.app.database.db
    .selectFrom('load_balancer_destinations')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('service_id', '=', serviceId)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}
