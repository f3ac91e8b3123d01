// TypeBox contracts of the databases area (shapes of the v3 contract and its additions),
// generated with scripts/contract-to-typebox.mjs and tidied: shared shapes are named once.
import { Type } from '@sinclair/typebox';
import {
  DateTime,
  IdParams,
  IpRestriction,
  IpRestrictionBody,
  MessageResponse,
  MetricSeries,
  MetricWindowQuery,
  Nullable,
  PageQuery,
  Paginated,
  StringEnum,
  Uuid,
} from '../../shared/schemas/common.js';

export const DATABASE_STATUSES = [
  'creating',
  'ready',
  'updating',
  'passwordChange',
  'passwordChangeFailed',
  'deleting',
  'error',
  'dbDeletionFailed',
  'restoring',
  'restoringFailed',
  'updatingExternalConnection',
] as const;
export const DATABASE_TYPES = ['postgresql', 'mariadb', 'mysql', 'mongodb', 'redis', 'valkey'] as const;
/** The types a database can be created with: the contract's create enum leaves mongodb out (representations still name it). */
export const CREATABLE_DATABASE_TYPES = ['postgresql', 'mariadb', 'mysql', 'redis', 'valkey'] as const;
const DatabaseStatusSchema = StringEnum(DATABASE_STATUSES);
/**
 * The specification gives a database a backup status whose value `ready` it names, and refuses a
 * restart while a backup is in progress; no public source names the field or the other value, so
 * both are this project's decision (marked x-decided like the additions document's decided fields).
 */
const BACKUP_STATUSES = ['ready', 'inProgress'] as const;
const DatabaseBackupStatus = StringEnum(BACKUP_STATUSES, {
  'x-decided': true,
  description:
    'inProgress while a backup (internal or external) of the database is being taken, else ready. Restart, password reset, suspension and restores wait for ready.',
});
/** A listed backup: inProgress until it is taken (it can be restored or deleted only once ready). */
const BackupStatus = StringEnum(BACKUP_STATUSES, {
  'x-decided': true,
  description: 'inProgress while the backup is being taken (it cannot be restored or deleted yet), then ready.',
});
const DatabaseTypeSchema = StringEnum(DATABASE_TYPES);
const BackupParams = Type.Object({
  id: Uuid(),
  backup_id: Type.String(),
});
const StorageValue = Type.Object(
  {
    value: Type.Number(),
  },
  { additionalProperties: false },
);
const DisplayName = Type.String({ minLength: 2, maxLength: 64 });
/** db_name and db_user. */
const DbIdentifier = Type.String({ minLength: 2, maxLength: 100, pattern: '^[a-zA-Z0-9_\\-+]+$' });
const DbPassword = Type.String({ minLength: 4, maxLength: 100, pattern: '^[a-zA-Z0-9_?<>#@\\-=+]+$' });
const BackupType = StringEnum(['daily', 'manual']);
/** Restore bodies: where to restore (default: the backup's own database). */
const RestoreTarget = Type.Object(
  {
    target_database_id: Type.Optional(Uuid()),
  },
  { additionalProperties: false },
);

export const DatabaseView = Type.Object(
  {
    id: Uuid(),
    company_id: Nullable(Type.String()),
    project_id: Nullable(Uuid()),
    name: Type.String(),
    display_name: Type.String(),
    type: DatabaseTypeSchema,
    version: Type.String(),
    status: Nullable(DatabaseStatusSchema),
    is_suspended: Type.Boolean(),
    resource_type_name: Nullable(Type.String()),
    created_at: DateTime(),
    updated_at: DateTime(),
    backup_status: DatabaseBackupStatus,
  },
  { additionalProperties: false },
);

/** An item of GET /databases: the database view without company_id and project_id. */
const { id, name, display_name, status, type, version, resource_type_name, is_suspended, created_at, updated_at, backup_status } = DatabaseView.properties;
const DatabaseListItem = Type.Object(
  { id, name, display_name, status, type, version, resource_type_name, is_suspended, created_at, updated_at, backup_status },
  { additionalProperties: false },
);

/** GET /databases/{id}: the database with its cluster, size and connection facts (never the password). */
export const DatabaseDetail = Type.Object(
  {
    ...DatabaseView.properties,
    cluster_id: Uuid(),
    cluster_display_name: Nullable(Type.String()),
    cluster_location: Nullable(Type.String()),
    resource_type_id: Nullable(Type.String()),
    cpu_limit: Nullable(Type.Integer({ minimum: 1 })),
    memory_limit: Nullable(Type.Integer({ minimum: 1 })),
    storage_size: Nullable(Type.Integer({ minimum: 1 })),
    db_name: Nullable(Type.String()),
    internal_hostname: Nullable(Type.String()),
    internal_port: Nullable(Type.String()),
    external_hostname: Nullable(Type.String()),
    external_port: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

export const listDatabasesContract = {
  operationId: 'listDatabasesV3',
  method: 'GET',
  path: '/databases',
  summary: 'List databases',
  tags: ['Databases'],
  querystring: PageQuery,
  success: 200,
  response: Paginated(DatabaseListItem),
  errors: [401, 403, 500],
} as const;

export const createDatabaseContract = {
  operationId: 'createDatabaseV3',
  method: 'POST',
  path: '/databases',
  summary: 'Create database',
  tags: ['Databases'],
  body: Type.Object(
    {
      display_name: DisplayName,
      type: StringEnum(CREATABLE_DATABASE_TYPES, { description: 'The database engine. mongodb databases cannot be created (a schema mismatch, 400).' }),
      version: Type.String({ maxLength: 16 }),
      cluster_id: Uuid(),
      resource_type_id: Type.String({ maxLength: 36 }),
      db_name: DbIdentifier,
      db_password: DbPassword,
      db_user: Type.Optional(DbIdentifier),
      project_id: Type.Optional(Nullable(Uuid())),
      extensions: Type.Optional(
        Type.Object({
          enable_vector: Type.Optional(Type.Boolean()),
          enable_postgis: Type.Optional(Type.Boolean()),
          enable_cron: Type.Optional(Type.Boolean()),
        }),
      ),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 201,
  response: DatabaseView,
  errors: [400, 401, 403, 429, 500],
} as const;

export const getDatabaseContract = {
  operationId: 'getDatabaseV3',
  method: 'GET',
  path: '/databases/{id}',
  summary: 'Get database',
  tags: ['Databases'],
  params: IdParams,
  success: 200,
  response: DatabaseDetail,
  errors: [401, 403, 404, 500],
} as const;

export const updateDatabaseContract = {
  operationId: 'updateDatabaseV3',
  method: 'PATCH',
  path: '/databases/{id}',
  summary: 'Update database',
  tags: ['Databases'],
  params: IdParams,
  body: Type.Object(
    {
      display_name: Type.Optional(DisplayName),
      resource_type_id: Type.Optional(Type.String({ maxLength: 36 })),
      project_id: Type.Optional(Nullable(Uuid())),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: DatabaseView,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteDatabaseContract = {
  operationId: 'deleteDatabaseV3',
  method: 'DELETE',
  path: '/databases/{id}',
  summary: 'Delete database',
  tags: ['Databases'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const activateDatabaseContract = {
  operationId: 'activateDatabaseV3',
  method: 'POST',
  path: '/databases/{id}/activate',
  summary: 'Activate database',
  tags: ['Databases'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const suspendDatabaseContract = {
  operationId: 'suspendDatabaseV3',
  method: 'POST',
  path: '/databases/{id}/suspend',
  summary: 'Suspend database',
  tags: ['Databases'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const resetDatabasePasswordContract = {
  operationId: 'resetDatabasePasswordV3',
  method: 'POST',
  path: '/databases/{id}/reset-password',
  summary: 'Reset database password',
  tags: ['Databases'],
  params: IdParams,
  body: Type.Object(
    {
      new_password: DbPassword,
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

/** The six metric series share one contract shape: GET /databases/{id}/metrics/<metric>. */
export const DATABASE_METRICS = ['cpu-usage', 'cpu-limit', 'memory-usage', 'memory-limit', 'storage-usage', 'storage-limit'] as const;
const metricContract = (metric: (typeof DATABASE_METRICS)[number]) =>
  ({
    operationId: `getDatabase${metric.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase())}V3`,
    method: 'GET',
    path: `/databases/{id}/metrics/${metric}`,
    summary: `Get database ${metric.replace('-', ' ')}`,
    tags: ['Databases'],
    params: IdParams,
    querystring: MetricWindowQuery,
    success: 200,
    response: MetricSeries,
    errors: [401, 403, 404, 500],
  }) as const;
export const databaseMetricContracts = DATABASE_METRICS.map((metric) => ({ metric, contract: metricContract(metric) }));

/** all-storage and used-storage: one value each. */
const storageContract = (operationId: string, which: 'all' | 'used') =>
  ({
    operationId,
    method: 'GET',
    path: `/databases/{id}/metrics/${which}-storage`,
    summary: `Get database ${which} storage`,
    tags: ['Databases'],
    params: IdParams,
    success: 200,
    response: StorageValue,
    errors: [401, 403, 404, 500],
  }) as const;
export const getDatabaseAllStorageContract = storageContract('getDatabaseAllStorageV3', 'all');
export const getDatabaseUsedStorageContract = storageContract('getDatabaseUsedStorageV3', 'used');

export const listDatabaseBackupsContract = {
  operationId: 'listDatabaseBackupsV3',
  method: 'GET',
  path: '/databases/{id}/backups',
  summary: 'List database backups',
  tags: ['Databases'],
  params: IdParams,
  querystring: Type.Object({
    type: Type.Optional(BackupType),
  }),
  success: 200,
  response: Type.Array(
    Type.Object(
      {
        id: Type.String(),
        name: Type.String(),
        display_name: Type.String(),
        type: BackupType,
        created_at: DateTime(),
        expires_at: DateTime(),
        status: BackupStatus,
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 403, 404, 500],
} as const;

export const createDatabaseBackupContract = {
  operationId: 'createDatabaseBackupV3',
  method: 'POST',
  path: '/databases/{id}/backups',
  summary: 'Create database backup',
  tags: ['Databases'],
  params: IdParams,
  body: Type.Object({
    display_name: Type.String({ minLength: 1 }),
  }),
  bodyRequired: true,
  success: 202,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteDatabaseBackupContract = {
  operationId: 'deleteDatabaseBackupV3',
  method: 'DELETE',
  path: '/databases/{id}/backups/{backup_id}',
  summary: 'Delete database backup',
  tags: ['Databases'],
  params: BackupParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const restoreDatabaseBackupContract = {
  operationId: 'restoreDatabaseBackupV3',
  method: 'POST',
  path: '/databases/{id}/backups/{backup_id}/restore',
  summary: 'Restore database backup',
  tags: ['Databases'],
  params: BackupParams,
  body: Nullable(RestoreTarget),
  bodyRequired: false,
  success: 202,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const toggleDatabaseExternalConnectionContract = {
  operationId: 'toggleDatabaseExternalConnectionV3',
  method: 'POST',
  path: '/databases/{id}/external-connection/toggle',
  summary: 'Toggle database external connection',
  tags: ['Databases'],
  params: IdParams,
  success: 202,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const listDatabaseInternalConnectionsContract = {
  operationId: 'listDatabaseInternalConnectionsV3',
  method: 'GET',
  path: '/databases/{id}/internal-connections',
  summary: 'List database internal connections',
  tags: ['Databases'],
  params: IdParams,
  success: 200,
  response: Type.Array(
    Type.Object(
      {
        id: Uuid(),
        source_id: Type.String(),
        source_type: StringEnum(['appResource', 'dbResource']),
        source_name: Nullable(Type.String()),
        source_display_name: Nullable(Type.String()),
        target_id: Type.String(),
        target_type: StringEnum(['appResource', 'dbResource']),
        target_name: Nullable(Type.String()),
        target_display_name: Nullable(Type.String()),
      },
      { additionalProperties: false },
    ),
  ),
  errors: [401, 403, 404, 500],
} as const;

export const createDatabaseInternalConnectionContract = {
  operationId: 'createDatabaseInternalConnectionV3',
  method: 'POST',
  path: '/databases/{id}/internal-connections',
  summary: 'Create database internal connection',
  tags: ['Databases'],
  params: IdParams,
  body: Type.Object({
    target_id: Uuid(),
    target_type: StringEnum(['app', 'database']),
  }),
  bodyRequired: true,
  success: 201,
  response: Type.Object(
    {
      id: Uuid(),
    },
    { additionalProperties: false },
  ),
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteDatabaseInternalConnectionContract = {
  operationId: 'deleteDatabaseInternalConnectionV3',
  method: 'DELETE',
  path: '/databases/{id}/internal-connections/{connection_id}',
  summary: 'Delete database internal connection',
  tags: ['Databases'],
  params: Type.Object({
    id: Uuid(),
    connection_id: Uuid(),
  }),
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

export const getDatabaseIpRestrictionContract = {
  operationId: 'getDatabaseIpRestrictionV3',
  method: 'GET',
  path: '/databases/{id}/ip-restriction',
  summary: 'Get database ip restriction',
  tags: ['Databases'],
  params: IdParams,
  success: 200,
  response: IpRestriction,
  errors: [401, 403, 404, 500],
} as const;

export const updateDatabaseIpRestrictionContract = {
  operationId: 'updateDatabaseIpRestrictionV3',
  method: 'PUT',
  path: '/databases/{id}/ip-restriction',
  summary: 'Update database ip restriction',
  tags: ['Databases'],
  params: IdParams,
  body: IpRestrictionBody,
  bodyRequired: true,
  success: 200,
  response: IpRestriction,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const restartDatabaseContract = {
  operationId: 'restartDatabaseV3',
  method: 'POST',
  path: '/databases/{id}/restart',
  summary: 'Restart database',
  tags: ['Databases'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const restartDatabaseAliasContract = {
  operationId: 'restartDatabaseAliasV3',
  method: 'POST',
  path: '/databases/{id}/restart-database',
  summary: 'Restart database alias',
  tags: ['Databases'],
  params: IdParams,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const listExternalDatabaseBackupsContract = {
  operationId: 'listExternalDatabaseBackupsV3',
  method: 'GET',
  path: '/databases/{id}/external-backups',
  summary: 'List external database backups',
  tags: ['Databases'],
  params: IdParams,
  success: 200,
  response: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.Optional(Type.String()),
      type: Type.Optional(BackupType),
      backup_target_id: Type.Optional(Uuid()),
      size: Type.Optional(Nullable(Type.Integer())),
      created_at: Type.Optional(DateTime()),
    }),
  ),
  errors: [400, 401, 403, 404, 500],
} as const;

export const createExternalDatabaseBackupContract = {
  operationId: 'createExternalDatabaseBackupV3',
  method: 'POST',
  path: '/databases/{id}/external-backups',
  summary: 'Create external database backup',
  tags: ['Databases'],
  params: IdParams,
  body: Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 200 }),
      backup_target_id: Type.Optional(Uuid()),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 202,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteExternalDatabaseBackupContract = {
  operationId: 'deleteExternalDatabaseBackupV3',
  method: 'DELETE',
  path: '/databases/{id}/external-backups/{backup_id}',
  summary: 'Delete external database backup',
  tags: ['Databases'],
  params: BackupParams,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const restoreExternalDatabaseBackupContract = {
  operationId: 'restoreExternalDatabaseBackupV3',
  method: 'POST',
  path: '/databases/{id}/external-backups/{backup_id}/restore',
  summary: 'Restore external database backup',
  tags: ['Databases'],
  params: BackupParams,
  // The specification: the body is required and is either a JSON object or JSON null.
  body: Nullable(RestoreTarget),
  bodyRequired: true,
  success: 202,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const listDatabaseBackupTargetsContract = {
  operationId: 'listDatabaseBackupTargetsV3',
  method: 'GET',
  path: '/databases/{id}/backup-targets',
  summary: 'List database backup targets',
  tags: ['Databases'],
  params: IdParams,
  success: 200,
  response: Type.Array(
    Type.Object({
      id: Uuid(),
      object_storage_id: Type.Optional(Nullable(Uuid())),
      bucket_name: Type.Optional(Type.String()),
      endpoint: Type.Optional(Nullable(Type.String())),
      created_at: Type.Optional(DateTime()),
    }),
  ),
  errors: [400, 401, 403, 404, 500],
} as const;

export const createDatabaseBackupTargetContract = {
  operationId: 'createDatabaseBackupTargetV3',
  method: 'POST',
  path: '/databases/{id}/backup-targets',
  summary: 'Create database backup target',
  tags: ['Databases'],
  params: IdParams,
  body: Type.Object(
    {
      object_storage_id: Type.Optional(Uuid()),
      bucket_name: Type.Optional(Type.String()),
      access_key: Type.Optional(Type.String()),
      secret_key: Type.Optional(Type.String()),
      endpoint: Type.Optional(Type.String()),
    },
    { additionalProperties: false },
  ),
  bodyRequired: true,
  success: 202,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteDatabaseBackupTargetContract = {
  operationId: 'deleteDatabaseBackupTargetV3',
  method: 'DELETE',
  path: '/databases/{id}/backup-targets/{target_id}',
  summary: 'Delete database backup target',
  tags: ['Databases'],
  params: Type.Object({
    id: Uuid(),
    target_id: Uuid(),
  }),
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;
