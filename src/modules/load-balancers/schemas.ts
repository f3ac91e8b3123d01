// Contracts of the load balancer operations (shapes of the v3 contract; descriptions our own).
import { Type } from '@sinclair/typebox';
import { DateTime, IdParams, MessageResponse, named, Nullable, PageQuery, Paginated, StringEnum, Uuid } from '../../shared/schemas/common.js';

/** Routing modes: DEFAULT spreads traffic by destination weight, GEO sends a client to the nearest destination. */
export const LB_TYPES = ['DEFAULT', 'GEO'] as const;
/** What a destination points at (the contract's names). */
export const DESTINATION_TYPES = ['APP', 'STATIC_SITE', 'OBJECT_STORAGE', 'EXTERNAL', 'LOAD_BALANCER'] as const;

const LbType = (description: string) => StringEnum([...LB_TYPES], { description });
const Weight = (description: string) => Type.Integer({ minimum: 0, maximum: 10000, description });
const Latitude = (description: string) => Type.Number({ minimum: -90, maximum: 90, description });
const Longitude = (description: string) => Type.Number({ minimum: -180, maximum: 180, description });

export const LoadBalancer = named(
  'LoadBalancer',
  Type.Object(
    {
      id: Uuid(),
      company_id: Type.String(),
      project_id: Nullable(Uuid()),
      display_name: Type.String({ description: 'Name chosen by the user' }),
      name: Type.String({ description: 'Company-unique slug derived from the first display name' }),
      type: LbType('DEFAULT: weighted routing over the enabled destinations; GEO: each client goes to the closest enabled destination'),
      created_at: DateTime(),
      updated_at: DateTime(),
    },
    { additionalProperties: false },
  ),
);

export const LoadBalancerDestination = named(
  'LoadBalancerDestination',
  Type.Object(
    {
      id: Uuid(),
      service_id: Nullable(Type.String({ description: 'The service traffic goes to; null for an external URL' })),
      service_type: StringEnum([...DESTINATION_TYPES], {
        description: 'APP, STATIC_SITE, OBJECT_STORAGE, LOAD_BALANCER (a service of the company) or EXTERNAL (a URL)',
      }),
      is_enabled: Type.Boolean({ description: 'Disabled destinations keep their settings but get no traffic' }),
      weight: Nullable(Weight('Share of traffic under DEFAULT routing, relative to the other enabled destinations')),
      url: Nullable(Type.String({ description: 'Target of an EXTERNAL destination; null otherwise' })),
      latitude: Nullable(Latitude('Where the destination serves from, for GEO routing')),
      longitude: Nullable(Longitude('Where the destination serves from, for GEO routing')),
      created_at: DateTime(),
      updated_at: DateTime(),
    },
    { additionalProperties: false },
  ),
);

const tags = ['Load balancers'];
const DestinationParams = Type.Object({ id: Uuid(), destination_id: Uuid() });

export const listLoadBalancersContract = {
  operationId: 'listLoadBalancersV3',
  method: 'GET',
  path: '/load-balancers',
  summary: 'List load balancers',
  tags,
  querystring: PageQuery,
  success: 200,
  response: Paginated(LoadBalancer),
  errors: [401, 403, 500],
} as const;

export const createLoadBalancerContract = {
  operationId: 'createLoadBalancerV3',
  method: 'POST',
  path: '/load-balancers',
  summary: 'Create load balancer',
  tags,
  body: Type.Object(
    {
      display_name: Type.String({ minLength: 2, maxLength: 64, description: 'Name to show; the slug `name` is derived from it' }),
      type: Type.Optional(LbType('Routing mode; DEFAULT when omitted')),
      project_id: Type.Optional(Nullable(Uuid({ description: 'Project to put the load balancer in; none when omitted' }))),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: LoadBalancer,
  errors: [400, 401, 403, 429, 500],
} as const;

export const getLoadBalancerContract = {
  operationId: 'getLoadBalancerV3',
  method: 'GET',
  path: '/load-balancers/{id}',
  summary: 'Get load balancer',
  tags,
  params: IdParams,
  success: 200,
  response: LoadBalancer,
  errors: [401, 403, 404, 500],
} as const;

export const updateLoadBalancerContract = {
  operationId: 'updateLoadBalancerV3',
  method: 'PATCH',
  path: '/load-balancers/{id}',
  summary: 'Update load balancer',
  tags,
  params: IdParams,
  body: Type.Object(
    {
      display_name: Type.Optional(Type.String({ minLength: 2, maxLength: 64 })),
      type: Type.Optional(LbType('New routing mode; switching to GEO needs coordinates on every destination')),
      project_id: Type.Optional(Nullable(Uuid({ description: 'Project to move the load balancer to; null takes it out of its project' }))),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: LoadBalancer,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteLoadBalancerContract = {
  operationId: 'deleteLoadBalancerV3',
  method: 'DELETE',
  path: '/load-balancers/{id}',
  summary: 'Delete load balancer',
  tags,
  params: IdParams,
  success: 204,
  errors: [401, 403, 404, 429, 500],
} as const;

export const listLoadBalancerDestinationsContract = {
  operationId: 'listLoadBalancerDestinationsV3',
  method: 'GET',
  path: '/load-balancers/{id}/destinations',
  summary: 'List load balancer destinations',
  tags,
  params: IdParams,
  querystring: PageQuery,
  success: 200,
  response: Paginated(LoadBalancerDestination),
  errors: [401, 403, 404, 500],
} as const;

export const createLoadBalancerDestinationContract = {
  operationId: 'createLoadBalancerDestinationV3',
  method: 'POST',
  path: '/load-balancers/{id}/destinations',
  summary: 'Create load balancer destination',
  tags,
  params: IdParams,
  body: Type.Object(
    {
      service_id: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 255,
          description: 'The service to send traffic to; required for every type but EXTERNAL, which must not have one',
        }),
      ),
      service_type: StringEnum([...DESTINATION_TYPES], { description: 'What the destination is' }),
      weight: Type.Optional(Weight('Share of traffic under DEFAULT routing (100 when omitted)')),
      url: Type.Optional(Type.String({ description: 'http(s) URL of an EXTERNAL destination; only for that type' })),
      latitude: Type.Optional(Latitude('Location for GEO routing; given together with longitude, required on a GEO load balancer')),
      longitude: Type.Optional(Longitude('Location for GEO routing; given together with latitude, required on a GEO load balancer')),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: LoadBalancerDestination,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteLoadBalancerDestinationContract = {
  operationId: 'deleteLoadBalancerDestinationV3',
  method: 'DELETE',
  path: '/load-balancers/{id}/destinations/{destination_id}',
  summary: 'Delete load balancer destination',
  tags,
  params: DestinationParams,
  success: 204,
  errors: [401, 403, 404, 429, 500],
} as const;

const decided = { 'x-decided': true } as const;

/**
 * Changing a destination in place (the contract can only delete and re-create it, which loses its
 * id and enabled state): its weight and its location. What it points at (service_type, service_id,
 * url) is its identity and stays; a different target is another destination.
 */
export const updateLoadBalancerDestinationContract = {
  operationId: 'updateLoadBalancerDestinationV3',
  method: 'PATCH',
  path: '/load-balancers/{id}/destinations/{destination_id}',
  summary: 'Update load balancer destination (weight, location)',
  tags,
  decided: true,
  params: DestinationParams,
  body: Type.Object(
    {
      weight: Type.Optional(Weight('New share of traffic under DEFAULT routing')),
      latitude: Type.Optional(
        Nullable(Latitude('New location for GEO routing; given together with longitude; null (both) removes it, refused on a GEO load balancer')),
      ),
      longitude: Type.Optional(
        Nullable(Longitude('New location for GEO routing; given together with latitude; null (both) removes it, refused on a GEO load balancer')),
      ),
    },
    { ...decided, additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: LoadBalancerDestination,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const toggleLoadBalancerDestinationContract = {
  operationId: 'toggleLoadBalancerDestinationV3',
  method: 'POST',
  path: '/load-balancers/{id}/destinations/{destination_id}/toggle',
  summary: 'Toggle load balancer destination',
  tags,
  params: DestinationParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;
