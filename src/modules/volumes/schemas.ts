// Contracts of the persistent volumes of an application (/applications/{id}/volumes). The v3
// contract has no operations for them although the specification gives applications persistent
// storage volumes, so every operation and shape here is this project's decision: served with
// `x-decided: true` (docs/api-behaviour.md, "Persistent volumes").
import { Type } from '@sinclair/typebox';
import { DateTime, IdParams, MessageResponse, Nullable, PageQuery, Paginated, StringEnum, Uuid } from '../../shared/schemas/common.js';

/** Sizes a volume may have, in GB (whole gigabytes; it can grow up to the maximum, never shrink). */
export const MIN_SIZE_GB = 1;
export const MAX_SIZE_GB = 1024;
/** Column widths (varchar) of the name and the mount path. */
export const NAME_MAX = 63;
export const MOUNT_PATH_MAX = 255;

const decided = { 'x-decided': true } as const;

const VolumeName = Type.String({
  ...decided,
  minLength: 1,
  maxLength: NAME_MAX,
  pattern: '^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$',
  description: 'Lower-case letters, digits and hyphens, starting and ending with a letter or digit; unique in the application.',
});
const MountPath = Type.String({
  ...decided,
  minLength: 1,
  maxLength: MOUNT_PATH_MAX,
  description:
    'Absolute path inside every process instance of the application (stored normalised: no trailing slash, no . or ..). Not /, not under /proc, /sys or /dev; unique in the application, and no volume may be mounted inside another.',
});
const SizeGb = Type.Integer({ ...decided, minimum: MIN_SIZE_GB, maximum: MAX_SIZE_GB, description: 'Size in GB; an update may grow it, never shrink it.' });

export const Volume = Type.Object(
  {
    id: Uuid(),
    application_id: Uuid(),
    name: Type.String(),
    mount_path: Type.String(),
    size_gb: Type.Integer({ minimum: MIN_SIZE_GB, maximum: MAX_SIZE_GB }),
    status: StringEnum(['available', 'deleting'], {
      description: 'deleting while its application is being deleted (the volume goes with it), else available.',
    }),
    used_bytes: Nullable(
      Type.Integer({
        minimum: 0,
        description: 'Bytes stored, as the runtime measured them; null where the runtime does not measure (simulated and local runtimes).',
      }),
    ),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { ...decided, additionalProperties: false },
);

const VolumeParams = Type.Object({ id: Uuid(), volume_id: Uuid() });

const base = { tags: ['Volumes'], decided: true } as const;

export const listVolumesContract = {
  ...base,
  operationId: 'listApplicationVolumesV3',
  method: 'GET',
  path: '/applications/{id}/volumes',
  summary: 'List persistent volumes of an application',
  params: IdParams,
  querystring: PageQuery,
  success: 200,
  response: Paginated(Volume),
  errors: [401, 403, 404, 500],
} as const;

export const createVolumeContract = {
  ...base,
  operationId: 'createApplicationVolumeV3',
  method: 'POST',
  path: '/applications/{id}/volumes',
  summary: 'Create a persistent volume',
  params: IdParams,
  body: Type.Object({ name: VolumeName, mount_path: MountPath, size_gb: SizeGb }, { ...decided, additionalProperties: false }),
  bodyRequired: true,
  success: 201,
  response: Volume,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const getVolumeContract = {
  ...base,
  operationId: 'getApplicationVolumeV3',
  method: 'GET',
  path: '/applications/{id}/volumes/{volume_id}',
  summary: 'Get a persistent volume',
  params: VolumeParams,
  success: 200,
  response: Volume,
  errors: [401, 403, 404, 500],
} as const;

export const updateVolumeContract = {
  ...base,
  operationId: 'updateApplicationVolumeV3',
  method: 'PATCH',
  path: '/applications/{id}/volumes/{volume_id}',
  summary: 'Update a persistent volume (rename, move, grow)',
  params: VolumeParams,
  body: Type.Object(
    { name: Type.Optional(VolumeName), mount_path: Type.Optional(MountPath), size_gb: Type.Optional(SizeGb) },
    { ...decided, additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: Volume,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteVolumeContract = {
  ...base,
  operationId: 'deleteApplicationVolumeV3',
  method: 'DELETE',
  path: '/applications/{id}/volumes/{volume_id}',
  summary: 'Delete a persistent volume and its contents',
  params: VolumeParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;
