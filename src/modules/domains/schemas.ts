// Contracts of the domain operations. Applications, static sites and load balancers serve the same
// eight operations with the same shapes (the reference differs only in the load balancer's delete,
// which answers 204 without a body: both forms are built), so one factory builds them per owner.
import { Type } from '@sinclair/typebox';
import { DateTime, IdParams, MessageResponse, named, Nullable, PageQuery, Paginated, Uuid } from '../../shared/schemas/common.js';

/** A domain of a service, as every domain operation returns it. */
export const Domain = named(
  'Domain',
  Type.Object(
    {
      id: Uuid(),
      name: Type.String({ description: 'The hostname: the system subdomain or the custom name (a wildcard reads `*.example.com`)' }),
      status: Type.String({
        description:
          'VERIFICATION (ownership record not yet seen), POINTING (owned, traffic not yet routed here), ACTIVE (serving with a certificate) or TIMED_OUT (checks gave up; refresh to start again)',
      }),
      type: Type.String({ description: 'SYSTEM (assigned by the platform, can be renamed and switched off) or CUSTOM (added by the user)' }),
      is_enabled: Type.Boolean({ description: 'Whether the domain serves traffic; only system domains can be switched off' }),
      is_wildcard: Type.Boolean(),
      is_primary: Type.Boolean({ description: 'The service has exactly one primary domain, used for canonical URLs' }),
      dns_records: Nullable(Type.Unknown({ description: 'Records to create at the DNS provider: a list of {type, name, value}; null for system domains' })),
      errors: Nullable(Type.Unknown({ description: 'Problems found by the last check: a list of {type, message}; null when none' })),
      created_at: DateTime(),
      updated_at: DateTime(),
    },
    { additionalProperties: false },
  ),
);

export const AddDomainBody = named(
  'AddDomainBody',
  Type.Object(
    {
      domain_name: Type.String({ minLength: 1, maxLength: 255, description: 'Hostname to serve, e.g. app.example.com; internationalized names are accepted' }),
      is_wildcard: Type.Optional(Type.Boolean({ description: 'Serve every subdomain of domain_name too (domain_name may be given as *.example.com)' })),
      custom_ssl_cert: Type.Optional(Type.String({ description: 'Your own PEM certificate for the hostname instead of an issued one' })),
      custom_ssl_key: Type.Optional(Type.String({ description: 'PEM private key of custom_ssl_cert; required with it' })),
    },
    { additionalProperties: false },
  ),
);

export const UpdateDomainBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 63, description: 'New subdomain label of the system domain' }),
  },
  { additionalProperties: false },
);

const DomainParams = Type.Object({ id: Uuid(), domain_id: Uuid() });

export interface OwnerNames {
  list: string;
  add: string;
  get: string;
  update: string;
  delete: string;
  refresh: string;
  setPrimary: string;
  toggle: string;
}

/** The eight contracts of one owner type. */
export function domainContracts(o: { pathBase: string; tag: string; noun: string; names: OwnerNames }) {
  const one = `${o.pathBase}/domains/{domain_id}`;
  const title = (verb: string, what = 'domain') => `${verb} ${o.noun} ${what}`;
  return {
    list: {
      operationId: o.names.list,
      method: 'GET',
      path: `${o.pathBase}/domains`,
      summary: title('List', 'domains'),
      tags: [o.tag],
      params: IdParams,
      querystring: PageQuery,
      success: 200,
      response: Paginated(Domain),
      errors: [401, 403, 404, 500],
    },
    add: {
      operationId: o.names.add,
      method: 'POST',
      path: `${o.pathBase}/domains`,
      summary: title('Add'),
      tags: [o.tag],
      params: IdParams,
      body: AddDomainBody,
      bodyRequired: true,
      success: 201,
      response: Domain,
      errors: [400, 401, 403, 404, 429, 500],
    },
    get: {
      operationId: o.names.get,
      method: 'GET',
      path: one,
      summary: title('Get'),
      tags: [o.tag],
      params: DomainParams,
      success: 200,
      response: Domain,
      errors: [401, 403, 404, 500],
    },
    update: {
      operationId: o.names.update,
      method: 'PATCH',
      path: one,
      summary: title('Update'),
      tags: [o.tag],
      params: DomainParams,
      body: UpdateDomainBody,
      bodyRequired: true,
      success: 200,
      response: Domain,
      errors: [400, 401, 403, 404, 429, 500],
    },
    /** Delete as applications and static sites answer it: 200 with a message. */
    deleteMessage: {
      operationId: o.names.delete,
      method: 'DELETE',
      path: one,
      summary: title('Delete'),
      tags: [o.tag],
      params: DomainParams,
      success: 200,
      response: MessageResponse,
      errors: [401, 403, 404, 429, 500],
    },
    /** Delete as load balancers answer it: 204 without a body. */
    deleteNoContent: {
      operationId: o.names.delete,
      method: 'DELETE',
      path: one,
      summary: title('Delete'),
      tags: [o.tag],
      params: DomainParams,
      success: 204,
      errors: [401, 403, 404, 429, 500],
    },
    refresh: {
      operationId: o.names.refresh,
      method: 'POST',
      path: `${one}/refresh-status`,
      summary: title('Refresh', 'domain status'),
      tags: [o.tag],
      params: DomainParams,
      success: 200,
      response: MessageResponse,
      errors: [401, 403, 404, 429, 500],
    },
    setPrimary: {
      operationId: o.names.setPrimary,
      method: 'POST',
      path: `${one}/set-primary`,
      summary: title('Set', 'primary domain'),
      tags: [o.tag],
      params: DomainParams,
      success: 200,
      response: MessageResponse,
      errors: [401, 403, 404, 429, 500],
    },
    toggle: {
      operationId: o.names.toggle,
      method: 'POST',
      path: `${one}/toggle`,
      summary: title('Toggle', 'system domain'),
      tags: [o.tag],
      params: DomainParams,
      success: 200,
      response: MessageResponse,
      errors: [401, 403, 404, 429, 500],
    },
  } as const;
}
