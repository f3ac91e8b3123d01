// Contracts of an application's settings: maintenance mode, egress IPs, IP restriction, CDN and
// cache, access logs, TCP proxies and private ports (shapes of the v3 contract, additions winning).
import { Type } from '@sinclair/typebox';
import {
  DateTime,
  IdParams,
  IpRestriction,
  IpRestrictionBody,
  LogsOperation,
  MessageResponse,
  Nullable,
  PageQuery,
  Paginated,
  StringEnum,
  Uuid,
} from '../../shared/schemas/common.js';

export const ListApplicationTcpProxiesItem = Type.Object(
  {
    id: Uuid(),
    app_id: Uuid(),
    process_id: Uuid(),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    external_port: Type.Integer(),
    hostname: Type.String(),
    status: StringEnum(['creating', 'ready', 'failed', 'deleting']),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

export const ListApplicationPrivatePortsItem = Type.Object(
  {
    id: Uuid(),
    app_id: Uuid(),
    process_id: Uuid(),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    status: StringEnum(['creating', 'ready', 'failed', 'deleting']),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

export const getApplicationAccessLogsContract = {
  operationId: 'getApplicationAccessLogsV3',
  method: 'GET',
  path: '/applications/{id}/access-logs',
  summary: 'Get application access logs',
  tags: ['Applications'],
  params: IdParams,
  ...LogsOperation,
} as const;

export const toggleApplicationCdnContract = {
  operationId: 'toggleApplicationCdnV3',
  method: 'POST',
  path: '/applications/{id}/cdn/toggle',
  summary: 'Toggle application cdn',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: Type.Object(
    {
      is_turned_on: Type.Boolean(),
    },
    { additionalProperties: false },
  ),
  errors: [401, 403, 404, 429, 500],
} as const;

export const getApplicationIpRestrictionContract = {
  operationId: 'getApplicationIpRestrictionV3',
  method: 'GET',
  path: '/applications/{id}/ip-restriction',
  summary: 'Get application ip restriction',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: IpRestriction,
  errors: [401, 403, 404, 500],
} as const;

export const updateApplicationIpRestrictionContract = {
  operationId: 'updateApplicationIpRestrictionV3',
  method: 'PUT',
  path: '/applications/{id}/ip-restriction',
  summary: 'Update application ip restriction',
  tags: ['Applications'],
  params: IdParams,
  body: IpRestrictionBody,
  bodyRequired: true,
  success: 200,
  response: IpRestriction,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const purgeApplicationCacheContract = {
  operationId: 'purgeApplicationCacheV3',
  method: 'POST',
  path: '/applications/{id}/purge-cache',
  summary: 'Purge application cache',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const listApplicationTcpProxiesContract = {
  operationId: 'listApplicationTcpProxiesV3',
  method: 'GET',
  path: '/applications/{id}/tcp-proxies',
  summary: 'List application tcp proxies',
  tags: ['Applications'],
  params: IdParams,
  querystring: PageQuery,
  success: 200,
  response: Paginated(ListApplicationTcpProxiesItem),
  errors: [401, 403, 404, 500],
} as const;

export const createApplicationTcpProxyContract = {
  operationId: 'createApplicationTcpProxyV3',
  method: 'POST',
  path: '/applications/{id}/tcp-proxies',
  summary: 'Create application tcp proxy',
  tags: ['Applications'],
  params: IdParams,
  body: Type.Object({
    process_id: Uuid(),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
  }),
  bodyRequired: true,
  success: 201,
  response: ListApplicationTcpProxiesItem,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteApplicationTcpProxyContract = {
  operationId: 'deleteApplicationTcpProxyV3',
  method: 'DELETE',
  path: '/applications/{id}/tcp-proxies/{tcp_proxy_id}',
  summary: 'Delete application tcp proxy',
  tags: ['Applications'],
  params: Type.Object({
    id: Uuid(),
    tcp_proxy_id: Uuid(),
  }),
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const listApplicationPrivatePortsContract = {
  operationId: 'listApplicationPrivatePortsV3',
  method: 'GET',
  path: '/applications/{id}/private-ports',
  summary: 'List application private ports',
  tags: ['Applications'],
  params: IdParams,
  querystring: PageQuery,
  success: 200,
  response: Paginated(ListApplicationPrivatePortsItem),
  errors: [401, 403, 404, 500],
} as const;

export const createApplicationPrivatePortContract = {
  operationId: 'createApplicationPrivatePortV3',
  method: 'POST',
  path: '/applications/{id}/private-ports',
  summary: 'Create application private port',
  tags: ['Applications'],
  params: IdParams,
  body: Type.Object({
    process_id: Uuid(),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
  }),
  bodyRequired: true,
  success: 201,
  response: ListApplicationPrivatePortsItem,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteApplicationPrivatePortContract = {
  operationId: 'deleteApplicationPrivatePortV3',
  method: 'DELETE',
  path: '/applications/{id}/private-ports/{private_port_id}',
  summary: 'Delete application private port',
  tags: ['Applications'],
  params: Type.Object({
    id: Uuid(),
    private_port_id: Uuid(),
  }),
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const getApplicationMaintenanceModeContract = {
  operationId: 'getApplicationMaintenanceModeV3',
  method: 'GET',
  path: '/applications/{id}/maintenance-mode',
  summary: 'Get application maintenance mode',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: Type.Object(
    {
      is_enabled: Type.Boolean(),
      page_url: Nullable(Type.String({ format: 'uri' })),
    },
    { additionalProperties: false },
  ),
  errors: [401, 403, 404, 500],
} as const;

export const updateApplicationMaintenanceModeContract = {
  operationId: 'updateApplicationMaintenanceModeV3',
  method: 'PUT',
  path: '/applications/{id}/maintenance-mode',
  summary: 'Update application maintenance mode',
  tags: ['Applications'],
  params: IdParams,
  body: Type.Object(
    {
      is_enabled: Type.Boolean(),
      page_url: Type.Optional(Nullable(Type.String({ format: 'uri', pattern: '^https://' }))),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: Type.Object(
    {
      is_enabled: Type.Boolean(),
      page_url: Nullable(Type.String({ format: 'uri' })),
    },
    { additionalProperties: false },
  ),
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const getApplicationEgressIpsContract = {
  operationId: 'getApplicationEgressIpsV3',
  method: 'GET',
  path: '/applications/{id}/egress-ips',
  summary: 'Get application egress ips',
  tags: ['Applications'],
  params: IdParams,
  success: 200,
  response: Type.Object({
    egress_ips: Type.Array(Type.String()),
  }),
  errors: [401, 403, 404, 500],
} as const;
