// TypeBox contracts of the object-storage area (shapes of the v3 contract and its additions),
// generated with scripts/contract-to-typebox.mjs and tidied: shapes used twice are named once.
import { Type } from '@sinclair/typebox';
import { DateTime, IdParams, MessageResponse, Nullable, PageQuery, Paginated, StringEnum, Uuid } from '../../shared/schemas/common.js';

export const LOCATIONS = ['apac', 'eeur', 'enam', 'oc', 'weur', 'wnam'] as const;
export const JURISDICTIONS = ['default', 'eu', 'fedramp'] as const;
export const CORS_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'HEAD'] as const;
export const OBJECT_TYPES = ['folder', 'file', 'image', 'video', 'audio', 'document'] as const;
/** The longest grace period of old keys after a rotation (the specification). */
const MAX_OLD_KEYS_TTL_HOURS = 168;

const Location = StringEnum(LOCATIONS);
const Jurisdiction = StringEnum(JURISDICTIONS);
const DisplayName = Type.String({ minLength: 2, maxLength: 64 });

/** The bucket as update answers it (no endpoint, no keys). */
const ObjectStorageView = Type.Object(
  {
    id: Uuid(),
    company_id: Type.String(),
    project_id: Nullable(Uuid()),
    name: Type.String(),
    display_name: Type.String(),
    location: Location,
    jurisdiction: Jurisdiction,
    domain: Nullable(Type.String()),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

/** The bucket as create and get answer it: with the S3 bucket name, endpoint and keys. */
const { id, company_id, project_id, name, display_name, location, jurisdiction, domain, created_at, updated_at } = ObjectStorageView.properties;
const ObjectStorageDetail = Type.Object(
  {
    id,
    company_id,
    project_id,
    name,
    display_name,
    location,
    jurisdiction,
    bucket_name: Type.String(),
    domain,
    endpoint: Nullable(Type.String()),
    access_key: Nullable(Type.String()),
    secret_key: Nullable(Type.String()),
    created_at,
    updated_at,
  },
  { additionalProperties: false },
);

const ObjectStorageListItem = Type.Object({ id, name, display_name, location, jurisdiction, domain, created_at, updated_at }, { additionalProperties: false });

/** A CORS rule as created and (fully) replaced. */
const CorsPolicyBody = Type.Object(
  {
    methods: Type.Array(StringEnum(CORS_METHODS), { minItems: 1 }),
    origins: Type.Array(Type.String({ minLength: 1, maxLength: 250 }), { minItems: 1, maxItems: 100 }),
    headers: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 250 }), { maxItems: 100 })),
  },
  { additionalProperties: false },
);

const CorsPolicyParams = Type.Object({ id: Uuid(), cors_policy_id: Type.String() });

export const listObjectStoragesContract = {
  operationId: 'listObjectStoragesV3',
  method: 'GET',
  path: '/object-storage',
  summary: 'List object storage buckets',
  tags: ['Object storages'],
  querystring: PageQuery,
  success: 200,
  response: Paginated(ObjectStorageListItem),
  errors: [401, 403, 500],
} as const;

export const createObjectStorageContract = {
  operationId: 'createObjectStorageV3',
  method: 'POST',
  path: '/object-storage',
  summary: 'Create an object storage bucket',
  tags: ['Object storages'],
  body: Type.Object(
    {
      display_name: DisplayName,
      location: Type.Optional(Location),
      jurisdiction: Type.Optional(Jurisdiction),
      public_access: Type.Optional(Type.Boolean()),
      project_id: Type.Optional(Nullable(Uuid())),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: ObjectStorageDetail,
  errors: [400, 401, 403, 429, 500],
} as const;

export const getObjectStorageContract = {
  operationId: 'getObjectStorageV3',
  method: 'GET',
  path: '/object-storage/{id}',
  summary: 'Get an object storage bucket',
  tags: ['Object storages'],
  params: IdParams,
  success: 200,
  response: ObjectStorageDetail,
  errors: [401, 403, 404, 500],
} as const;

export const updateObjectStorageContract = {
  operationId: 'updateObjectStorageV3',
  method: 'PATCH',
  path: '/object-storage/{id}',
  summary: 'Update an object storage bucket',
  tags: ['Object storages'],
  params: IdParams,
  body: Type.Object(
    {
      display_name: Type.Optional(DisplayName),
      project_id: Type.Optional(Nullable(Uuid())),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: ObjectStorageView,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteObjectStorageContract = {
  operationId: 'deleteObjectStorageV3',
  method: 'DELETE',
  path: '/object-storage/{id}',
  summary: 'Delete an object storage bucket and its objects',
  tags: ['Object storages'],
  params: IdParams,
  success: 204,
  errors: [401, 403, 404, 429, 500],
} as const;

export const createObjectStorageDomainContract = {
  operationId: 'createObjectStorageDomainV3',
  method: 'POST',
  path: '/object-storage/{id}/domain',
  summary: 'Enable the public CDN domain of a bucket',
  tags: ['Object storages'],
  params: IdParams,
  success: 200,
  response: Type.Object({ id: Uuid(), domain: Nullable(Type.String()) }, { additionalProperties: false }),
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteObjectStorageDomainContract = {
  operationId: 'deleteObjectStorageDomainV3',
  method: 'DELETE',
  path: '/object-storage/{id}/domain',
  summary: 'Disable the public CDN domain of a bucket',
  tags: ['Object storages'],
  params: IdParams,
  success: 204,
  errors: [401, 403, 404, 429, 500],
} as const;

export const listObjectStorageCorsPoliciesContract = {
  operationId: 'listObjectStorageCorsPoliciesV3',
  method: 'GET',
  path: '/object-storage/{id}/cors-policies',
  summary: 'List the CORS rules of a bucket',
  tags: ['Object storages'],
  params: IdParams,
  success: 200,
  response: Type.Object(
    {
      data: Type.Array(
        Type.Object(
          {
            id: Type.String(),
            methods: Type.Array(StringEnum(CORS_METHODS)),
            origins: Type.Array(Type.String()),
            headers: Nullable(Type.Array(Type.String())),
          },
          { additionalProperties: false },
        ),
      ),
    },
    { additionalProperties: false },
  ),
  errors: [401, 403, 404, 500],
} as const;

export const createObjectStorageCorsPolicyContract = {
  operationId: 'createObjectStorageCorsPolicyV3',
  method: 'POST',
  path: '/object-storage/{id}/cors-policies',
  summary: 'Add a CORS rule to a bucket',
  tags: ['Object storages'],
  params: IdParams,
  body: CorsPolicyBody,
  bodyRequired: true,
  success: 201,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const updateObjectStorageCorsPolicyContract = {
  operationId: 'updateObjectStorageCorsPolicyV3',
  method: 'PATCH',
  path: '/object-storage/{id}/cors-policies/{cors_policy_id}',
  summary: 'Replace a CORS rule of a bucket',
  tags: ['Object storages'],
  params: CorsPolicyParams,
  body: CorsPolicyBody,
  bodyRequired: true,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteObjectStorageCorsPolicyContract = {
  operationId: 'deleteObjectStorageCorsPolicyV3',
  method: 'DELETE',
  path: '/object-storage/{id}/cors-policies/{cors_policy_id}',
  summary: 'Remove a CORS rule from a bucket',
  tags: ['Object storages'],
  params: CorsPolicyParams,
  success: 204,
  errors: [401, 403, 404, 429, 500],
} as const;

export const listObjectStorageObjectsContract = {
  operationId: 'listObjectStorageObjectsV3',
  method: 'GET',
  path: '/object-storage/{id}/objects',
  summary: 'List the objects of a bucket',
  tags: ['Object storages'],
  params: IdParams,
  querystring: Type.Object({
    prefix: Type.Optional(Type.String()),
    delimiter: Type.Optional(Type.String()),
    cursor: Type.Optional(Type.String()),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 25 })),
  }),
  success: 200,
  response: Type.Object(
    {
      data: Type.Array(
        Type.Object(
          {
            key: Type.String(),
            type: StringEnum(OBJECT_TYPES),
            content_type: Nullable(Type.String()),
            size: Nullable(Type.Number({ minimum: 0 })),
            updated_at: Nullable(Type.String()),
            e_tag: Nullable(Type.String()),
          },
          { additionalProperties: false },
        ),
      ),
      cursor: Nullable(Type.String()),
    },
    { additionalProperties: false },
  ),
  errors: [401, 403, 404, 500],
} as const;

export const deleteObjectStorageObjectsContract = {
  operationId: 'deleteObjectStorageObjectsV3',
  method: 'DELETE',
  path: '/object-storage/{id}/objects',
  summary: 'Delete objects of a bucket by key',
  tags: ['Object storages'],
  params: IdParams,
  body: Type.Object(
    {
      keys: Type.Array(Type.String(), { minItems: 1, maxItems: 1000 }),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 204,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const rotateObjectStorageCredentialsContract = {
  operationId: 'rotateObjectStorageCredentialsV3',
  method: 'POST',
  path: '/object-storage/{id}/rotate-credentials',
  summary: 'Rotate the access and secret keys of a bucket',
  tags: ['Object storages'],
  params: IdParams,
  body: Type.Object(
    {
      old_keys_ttl_hours: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_OLD_KEYS_TTL_HOURS, default: 0 })),
    },
    { additionalProperties: false },
  ),
  bodyRequired: false,
  success: 200,
  response: Type.Object({
    id: Uuid(),
    display_name: Type.Optional(Type.String()),
    access_key: Type.String(),
    secret_key: Type.String(),
    old_access_key: Type.Optional(Nullable(Type.String())),
    old_secret_key: Type.Optional(Nullable(Type.String())),
    old_keys_expired_at: Type.Optional(Nullable(DateTime())),
  }),
  errors: [400, 401, 403, 404, 429, 500],
} as const;

// --- Operations this project added (x-decided; docs/api-behaviour.md, "Object storage") ---------

const decided = { 'x-decided': true } as const;
export const PRESIGN_METHODS = ['GET', 'PUT', 'DELETE', 'HEAD'] as const;
/** S3's limits: a presigned URL lives 1 second to 7 days; a key is at most 1024 bytes of UTF-8. */
export const MAX_PRESIGN_EXPIRY = 604800;
export const MAX_OBJECT_KEY_BYTES = 1024;

export const presignObjectStorageContract = {
  operationId: 'presignObjectStorageObjectV3',
  method: 'POST',
  path: '/object-storage/{id}/presign',
  summary: 'Presign a URL for one object operation on the S3 data plane',
  tags: ['Object storages'],
  decided: true,
  params: IdParams,
  body: Type.Object(
    {
      method: StringEnum(PRESIGN_METHODS, { ...decided, description: 'The S3 request the URL allows: GET (download), PUT (upload), DELETE or HEAD.' }),
      key: Type.String({ ...decided, minLength: 1, maxLength: MAX_OBJECT_KEY_BYTES, description: 'The object key (at most 1024 bytes of UTF-8).' }),
      expires_in: Type.Optional(
        Type.Integer({ ...decided, minimum: 1, maximum: MAX_PRESIGN_EXPIRY, default: 900, description: 'Seconds the URL stays valid (1 to 604800).' }),
      ),
      content_type: Type.Optional(
        Type.String({
          ...decided,
          minLength: 1,
          maxLength: 255,
          description: 'PUT only: the Content-Type the upload must send (signed, so another is refused) and the object keeps.',
        }),
      ),
    },
    { ...decided, additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: Type.Object(
    {
      url: Type.String({ description: 'The path-style data-plane URL (SigV4 query form), on the host the API was reached at.' }),
      method: StringEnum(PRESIGN_METHODS),
      headers: Type.Record(Type.String(), Type.String(), { description: 'Headers the request must send as given (signed).' }),
      access_key: Type.String({ description: 'The bucket key that signed the URL: rotating it away ends the URL early.' }),
      expires_at: DateTime(),
    },
    { ...decided, additionalProperties: false },
  ),
  errors: [400, 401, 403, 404, 409, 429, 500],
} as const;

export const purgeObjectStorageCacheContract = {
  operationId: 'purgeObjectStorageCacheV3',
  method: 'POST',
  path: '/object-storage/{id}/purge-cache',
  summary: 'Purge the CDN cache of a bucket',
  tags: ['Object storages'],
  decided: true,
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;
