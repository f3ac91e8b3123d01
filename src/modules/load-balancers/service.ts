// Load balancers and their destinations.
//
// Rules:
// - at most MAX_DESTINATIONS (20, the specification) destinations per load balancer, enabled or
//   not; the count and the insert are serialized per load balancer (lockLoadBalancer);
// - a destination is a service of the caller's company (application, static site, object storage
//   bucket, load balancer; found through the service registry, a kind no module registered is a
//   400 saying so) or an external http(s) URL; one target at most once per load balancer;
// - a load balancer never routes to itself, directly or through other load balancers (enabled or
//   not, since a toggle may enable them): adding such an edge is a 400 naming the loop; the
//   company's edges between load balancers are serialized (lockRoutingGraph);
// - DEFAULT routing uses the weight (100 when omitted); GEO routing needs latitude and longitude
//   on every destination (given together, or not at all on a DEFAULT load balancer); weight and
//   location change in place (updateDestination), the target never does;
// - a service that is removed stops being a destination anywhere (removeDestinationsTo, called on
//   the application's `application.removed` signal and when a load balancer is deleted).
//
// Public functions for other modules: removeDestinationsTo, loadBalancerSummaries. The queries are
// storage.ts's.
import type { CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { ApiError, badRequest, notFound } from '../../shared/errors.js';
import { servingChanged } from '../../shared/edge/index.js';
import { newId } from '../../shared/ids.js';
import { outboundUrlProblem } from '../../shared/net.js';
import type { Page } from '../../shared/pagination.js';
import type { ServiceSummary } from '../../shared/services.js';
import { registerService, removeServiceDomains } from '../domains/index.js';
import { forgetService, placeService } from '../projects/index.js';
import {
  countDestinations,
  countUnlocatedDestinations,
  deleteDestinationRow,
  deleteDestinationsOf,
  deleteDestinationsTo,
  deleteLoadBalancerRow,
  destinationToService,
  destinationToUrl,
  findDestination,
  findLoadBalancer,
  insertDestination,
  insertLoadBalancer,
  listDestinationsPage,
  listLoadBalancersPage,
  loadBalancerEdges,
  loadBalancerNames,
  loadBalancerSummaryRows,
  lockLoadBalancer,
  lockRoutingGraph,
  lockTarget,
  setDestinationEnabled,
  updateDestinationRow,
  updateLoadBalancerRow,
  type DestinationType,
  type LoadBalancerDestinationsTable,
  type LoadBalancersTable,
  type LoadBalancerType,
} from './storage.js';

export const MAX_DESTINATIONS = 20;
export const DEFAULT_WEIGHT = 100;
const MAX_URL_LENGTH = 2048;
/** The service registry kind of this area. */
export const KIND = 'load-balancer';

/** The registry kind and the name in messages of each service destination type. */
const SERVICE_TYPES: Record<Exclude<DestinationType, 'EXTERNAL'>, { kind: string; label: string }> = {
  APP: { kind: 'app', label: 'Application' },
  STATIC_SITE: { kind: 'static-site', label: 'Static site' },
  OBJECT_STORAGE: { kind: 'object-storage', label: 'Object storage bucket' },
  LOAD_BALANCER: { kind: KIND, label: 'Load balancer' },
};

const now = () => new Date().toISOString();

const view = (lb: LoadBalancersTable) => ({
  id: lb.id,
  company_id: lb.company_id,
  project_id: lb.project_id,
  display_name: lb.display_name,
  name: lb.name,
  type: lb.type,
  created_at: lb.created_at,
  updated_at: lb.updated_at,
});

const destinationView = (d: LoadBalancerDestinationsTable) => ({
  id: d.id,
  service_id: d.service_id,
  service_type: d.service_type,
  is_enabled: d.is_enabled === 1,
  weight: d.weight,
  url: d.url,
  latitude: d.latitude === null ? null : Number(d.latitude),
  longitude: d.longitude === null ? null : Number(d.longitude),
  created_at: d.created_at,
  updated_at: d.updated_at,
});

// --- Load balancers ------------------------------------------------------------------------------

/** The company's load balancer, else 404. */
async function requireLoadBalancer({ tx, companyId }: CallContext, id: string): Promise<LoadBalancersTable> {
  const lb = await findLoadBalancer(tx, companyId, id);
  if (!lb) throw notFound('Load balancer');
  return lb;
}

/** The company's load balancer, its changes locked (storage.ts's lock order), else 404. */
async function requireLocked({ tx, companyId }: CallContext, id: string): Promise<LoadBalancersTable> {
  const lb = await lockLoadBalancer(tx, companyId, id);
  if (!lb) throw notFound('Load balancer');
  return lb;
}

/** Newest first (the contract). */
export async function listLoadBalancers({ tx, companyId, scope }: CallContext, page: Page) {
  const res = await listLoadBalancersPage(tx, companyId, scope, page);
  return { ...res, data: res.data.map(view) };
}

export async function createLoadBalancer(ctx: CallContext, input: { display_name: string; type?: LoadBalancerType; project_id?: string | null }) {
  const { tx, companyId } = ctx;
  const t = now();
  const fields: Omit<LoadBalancersTable, 'name'> = {
    id: newId(),
    company_id: companyId,
    project_id: input.project_id ?? null,
    display_name: input.display_name,
    type: input.type ?? 'DEFAULT',
    created_at: t,
    updated_at: t,
  };
  const lb = await insertLoadBalancer(tx, fields);
  if (lb.project_id) await placeService(ctx, lb.id, KIND, lb.project_id);
  await registerService(ctx, KIND, { id: lb.id, name: lb.name, cluster_id: null });
  return view(lb);
}

export async function getLoadBalancer(ctx: CallContext, id: string) {
  return view(await requireLoadBalancer(ctx, id));
}

export async function updateLoadBalancer(ctx: CallContext, id: string, input: { display_name?: string; type?: LoadBalancerType; project_id?: string | null }) {
  const { tx } = ctx;
  const lb = await requireLocked(ctx, id);
  if (input.type === 'GEO' && lb.type !== 'GEO') {
    const n = await countUnlocatedDestinations(tx, lb.id);
    if (n)
      throw badRequest(
        `GEO routing needs a location on every destination: ${n} destination(s) of this load balancer have no latitude and longitude; give them one first (PATCH /load-balancers/{id}/destinations/{destination_id})`,
      );
  }
  const patch: Partial<LoadBalancersTable> = { updated_at: now() };
  if (input.display_name !== undefined) patch.display_name = input.display_name;
  if (input.type !== undefined) patch.type = input.type;
  if (input.project_id !== undefined && input.project_id !== lb.project_id) {
    patch.project_id = input.project_id;
    await placeService(ctx, lb.id, KIND, input.project_id);
  }
  await updateLoadBalancerRow(tx, lb.id, patch);
  if (input.type !== undefined) servingChanged(ctx.app, tx);
  return view({ ...lb, ...patch });
}

/** Deletes the load balancer, its destinations and domains, and every destination routing to it. */
export async function deleteLoadBalancer(ctx: CallContext, id: string): Promise<void> {
  const { tx, companyId } = ctx;
  const lb = await requireLocked(ctx, id);
  await lockRoutingGraph(tx, companyId);
  await removeDestinationsTo(tx, lb.id);
  await deleteDestinationsOf(tx, lb.id);
  await removeServiceDomains(ctx.app, tx, lb.id);
  await forgetService(tx, lb.id);
  await deleteLoadBalancerRow(tx, lb.id);
}

/** The service registry's view of a load balancer (projects, domains, destinations, references). */
export function loadBalancerSummaries({ tx, companyId }: CallContext, ids: readonly string[]): Promise<ServiceSummary[]> {
  return loadBalancerSummaryRows(tx, companyId, ids);
}

// --- Destinations --------------------------------------------------------------------------------

export async function listDestinations(ctx: CallContext, id: string, page: Page) {
  const lb = await requireLoadBalancer(ctx, id);
  const res = await listDestinationsPage(ctx.tx, lb.id, page);
  return { ...res, data: res.data.map(destinationView) };
}

export interface DestinationInput {
  service_type: DestinationType;
  service_id?: string;
  url?: string;
  weight?: number;
  latitude?: number;
  longitude?: number;
}

/** The form rules of a destination (400): which of service_id / url, the URL itself, the location. */
function checkForm(ctx: CallContext, lb: LoadBalancersTable, input: DestinationInput) {
  if (input.service_type === 'EXTERNAL') {
    if (input.service_id !== undefined) throw badRequest('service_id must not be given for an EXTERNAL destination; give its url');
    if (input.url === undefined) throw badRequest('url is required for an EXTERNAL destination');
    if (input.url.length > MAX_URL_LENGTH) throw badRequest(`url must be at most ${MAX_URL_LENGTH} characters`);
    const problem = outboundUrlProblem(input.url, ctx.app.config.production, { label: 'url', httpsInProduction: false });
    if (problem) throw badRequest(problem);
  } else {
    if (input.service_id === undefined) throw badRequest(`service_id is required for a ${input.service_type} destination`);
    if (input.url !== undefined) throw badRequest('url is only for EXTERNAL destinations');
  }
  if ((input.latitude === undefined) !== (input.longitude === undefined)) throw badRequest('latitude and longitude must be given together');
  if (lb.type === 'GEO' && input.latitude === undefined) throw badRequest('A destination of a GEO load balancer needs latitude and longitude');
}

/**
 * The 400 for an edge `lb -> target` between load balancers that closes a loop: `target` is `lb`,
 * or `lb` is reachable from `target` through destinations of type LOAD_BALANCER.
 */
async function checkNoLoop(tx: Tx, companyId: string, lb: LoadBalancersTable, targetId: string) {
  if (targetId === lb.id) throw badRequest('A load balancer cannot be a destination of itself');
  const parent = new Map<string, string>([[targetId, '']]);
  let frontier = [targetId];
  while (frontier.length) {
    const edges = await loadBalancerEdges(tx, companyId, frontier);
    frontier = [];
    for (const e of edges) {
      if (!e.service_id || parent.has(e.service_id)) continue;
      parent.set(e.service_id, e.load_balancer_id);
      if (e.service_id === lb.id) {
        const path: string[] = [];
        for (let at: string | undefined = lb.id; at; at = parent.get(at)) path.unshift(at);
        const names = new Map((await loadBalancerNames(tx, path)).map((r) => [r.id, r.name]));
        const loop = [lb.id, ...path].map((x) => names.get(x) ?? x).join(' -> ');
        throw badRequest(`Adding load balancer ${targetId} as a destination would create a routing loop: ${loop}`);
      }
      frontier.push(e.service_id);
    }
  }
}

export async function createDestination(ctx: CallContext, id: string, input: DestinationInput) {
  const { tx, app, companyId } = ctx;
  const lb = await requireLocked(ctx, id);
  checkForm(ctx, lb, input);
  if (input.service_type === 'LOAD_BALANCER') await lockRoutingGraph(tx, companyId);
  if ((await countDestinations(tx, lb.id)) >= MAX_DESTINATIONS)
    throw badRequest(`A load balancer has at most ${MAX_DESTINATIONS} destinations; delete one before adding another`);

  let dup;
  if (input.service_type === 'EXTERNAL') {
    dup = await destinationToUrl(tx, lb.id, input.url!);
  } else {
    const { kind, label } = SERVICE_TYPES[input.service_type];
    const registered = app.services.get(kind);
    if (!registered) throw badRequest(`${input.service_type} destinations are not available on this server yet (${label.toLowerCase()}s are not served)`);
    // Held until commit: the service's removal (removeDestinationsTo) waits, then removes this one too.
    await lockTarget(tx, input.service_id!);
    if (!(await registered.find(ctx, input.service_id!))) throw notFound(label);
    if (input.service_type === 'LOAD_BALANCER') await checkNoLoop(tx, companyId, lb, input.service_id!);
    dup = await destinationToService(tx, lb.id, input.service_id!);
  }
  if (dup) throw badRequest(`This load balancer already routes to ${input.service_type === 'EXTERNAL' ? input.url : input.service_id} (destination ${dup.id})`);

  const t = now();
  const row: LoadBalancerDestinationsTable = {
    id: newId(),
    load_balancer_id: lb.id,
    company_id: companyId,
    service_type: input.service_type,
    service_id: input.service_id ?? null,
    url: input.url ?? null,
    is_enabled: 1,
    weight: input.weight ?? DEFAULT_WEIGHT,
    latitude: input.latitude ?? null,
    longitude: input.longitude ?? null,
    created_at: t,
    updated_at: t,
  };
  await insertDestination(tx, row);
  servingChanged(ctx.app, tx);
  return destinationView(row);
}

async function requireDestination(tx: Tx, lbId: string, destinationId: string) {
  const d = await findDestination(tx, lbId, destinationId);
  if (!d) throw new ApiError(404, 'Destination not found');
  return d;
}

export async function deleteDestination(ctx: CallContext, id: string, destinationId: string): Promise<void> {
  const lb = await requireLocked(ctx, id);
  const d = await requireDestination(ctx.tx, lb.id, destinationId);
  await deleteDestinationRow(ctx.tx, d.id);
  servingChanged(ctx.app, ctx.tx);
}

export async function toggleDestination(ctx: CallContext, id: string, destinationId: string) {
  const lb = await requireLocked(ctx, id);
  const d = await requireDestination(ctx.tx, lb.id, destinationId);
  const enabled = d.is_enabled ? 0 : 1;
  await setDestinationEnabled(ctx.tx, d.id, enabled, now());
  servingChanged(ctx.app, ctx.tx);
  return { message: enabled ? 'Destination enabled' : 'Destination disabled' };
}

export interface DestinationPatch {
  weight?: number;
  latitude?: number | null;
  longitude?: number | null;
}

/**
 * Changes a destination's weight and location in place (its target stays: another target is
 * another destination). Latitude and longitude go together, as at creation; removing them (both
 * null) is refused on a GEO load balancer, whose destinations all need one. An empty body changes
 * nothing and answers the destination as it is.
 */
export async function updateDestination(ctx: CallContext, id: string, destinationId: string, input: DestinationPatch) {
  const lb = await requireLocked(ctx, id);
  const d = await requireDestination(ctx.tx, lb.id, destinationId);
  if ((input.latitude === undefined) !== (input.longitude === undefined) || (input.latitude === null) !== (input.longitude === null))
    throw badRequest('latitude and longitude must be given together (both numbers, or both null to remove the location)');
  if (input.latitude === null && lb.type === 'GEO')
    throw badRequest('A destination of a GEO load balancer needs latitude and longitude; they cannot be removed');
  const patch: Parameters<typeof updateDestinationRow>[2] = {};
  if (input.weight !== undefined) patch.weight = input.weight;
  if (input.latitude !== undefined) [patch.latitude, patch.longitude] = [input.latitude, input.longitude!];
  if (!Object.keys(patch).length) return destinationView(d);
  patch.updated_at = now();
  await updateDestinationRow(ctx.tx, d.id, patch);
  servingChanged(ctx.app, ctx.tx);
  return destinationView({ ...d, ...patch });
}

/**
 * Removes every destination, of any load balancer, that routes to service `serviceId` (the service
 * is being removed for good). Modules that remove services call it in the removing transaction;
 * applications are handled here (the `application.removed` signal).
 */
export async function removeDestinationsTo(tx: Tx, serviceId: string): Promise<void> {
  await lockTarget(tx, serviceId);
  await deleteDestinationsTo(tx, serviceId);
}
