// Operation declarations of the databases area: contract, permission, rate tier, thin handler.
import type { AppContext } from '../../shared/context.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';
import * as bk from './backups.js';
import * as ops from './operations.js';
import { findDatabase } from './storage.js';
import { badRequest, SCHEMA_MISMATCH } from '../../shared/errors.js';


export { migrations, tables } from './storage.js';

export const operations = [
  defineOperation({
    contract: c.listDatabasesContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async ({ tx, auth, query, scope }) => svc.listDatabases(tx, auth.company.id, pageOf(query), scope),
  }),
  defineOperation({
    contract: c.createDatabaseContract,
    permission: 'DATABASE:CREATE',
    tier: 'service_creation',
    handler: async ({ tx, app, auth, body }) => svc.databaseView(await svc.createDatabase(tx, app, auth.company.id, body)),
  }),
  defineOperation({
    contract: c.getDatabaseContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async ({ tx, app, auth, params }) => {
      await ops.noteRead(app, await findDatabase(tx, auth.company.id, params.id), (t, dbId, b) => bk.stepBackup(t, app, dbId, b));
      return svc.databaseDetailView(await findDatabase(tx, auth.company.id, params.id));
    },
  }),
  defineOperation({
    contract: c.updateDatabaseContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async ({ tx, auth, params, body }) => svc.databaseView(await svc.updateDatabase(tx, auth.company.id, params.id, body)),
  }),
  defineOperation({
    contract: c.deleteDatabaseContract,
    permission: 'DATABASE:DELETE',
    tier: 'service_mutation',
    handler: async ({ tx, auth, params }) => svc.deleteDatabase(tx, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.activateDatabaseContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async ({ tx, auth, params }) => svc.setSuspended(tx, auth.company.id, params.id, false),
  }),
  defineOperation({
    contract: c.suspendDatabaseContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async ({ tx, auth, params }) => svc.setSuspended(tx, auth.company.id, params.id, true),
  }),
  defineOperation({
    contract: c.resetDatabasePasswordContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async ({ tx, app, auth, params, body }) => svc.resetPassword(tx, app, auth.company.id, params.id, body.new_password),
  }),
  defineOperation({
    contract: c.restartDatabaseContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async ({ tx, auth, params }) => svc.restartDatabase(tx, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.restartDatabaseAliasContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async ({ tx, auth, params }) => svc.restartDatabase(tx, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.toggleDatabaseExternalConnectionContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async ({ tx, auth, params }) => svc.toggleExternalConnection(tx, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.getDatabaseIpRestrictionContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async ({ tx, auth, params }) => svc.ipRestrictionView(await findDatabase(tx, auth.company.id, params.id)),
  }),
  defineOperation({
    contract: c.updateDatabaseIpRestrictionContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async ({ tx, auth, params, body }) => svc.updateIpRestriction(tx, auth.company.id, params.id, body),
  }),
  defineOperation({
    contract: c.listDatabaseInternalConnectionsContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async ({ tx, app, auth, params }) => svc.listConnections(tx, app, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.createDatabaseInternalConnectionContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params, body }) => svc.createConnection(tx, app, auth.company.id, params.id, body),
  }),
  defineOperation({
    contract: c.deleteDatabaseInternalConnectionContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => svc.deleteConnection(tx, auth.company.id, params.id, params.connection_id),
  }),
  // Backups
  defineOperation({
    contract: c.listDatabaseBackupsContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async ({ tx, auth, params, query }) => bk.listBackups(tx, auth.company.id, params.id, query.type),
  }),
  defineOperation({
    contract: c.createDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params, body }) => bk.createBackup(tx, auth.company.id, params.id, body.display_name),
  }),
  defineOperation({
    contract: c.deleteDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => bk.deleteBackup(tx, auth.company.id, params.id, params.backup_id, false),
  }),
  defineOperation({
    contract: c.restoreDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params, body }) => bk.restoreBackup(tx, auth.company.id, params.id, params.backup_id, body?.target_database_id),
  }),
  defineOperation({
    contract: c.listExternalDatabaseBackupsContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async ({ tx, auth, params }) => bk.listExternalBackups(tx, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.createExternalDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params, body }) => bk.createExternalBackup(tx, auth.company.id, params.id, body),
  }),
  defineOperation({
    contract: c.deleteExternalDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => bk.deleteBackup(tx, auth.company.id, params.id, params.backup_id, true),
  }),
  defineOperation({
    contract: c.restoreExternalDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    // The body is required and may be an object or JSON null; the router tells a missing body
    // (400) from a `null` one.
    handler: async ({ tx, auth, params, body }) => {
      return bk.restoreExternalBackup(tx, auth.company.id, params.id, params.backup_id, body?.target_database_id);
    },
  }),
  defineOperation({
    contract: c.listDatabaseBackupTargetsContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async ({ tx, auth, params }) => bk.listTargets(tx, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.createDatabaseBackupTargetContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params, body }) => bk.createTarget(tx, app, auth.company.id, params.id, body),
  }),
  defineOperation({
    contract: c.deleteDatabaseBackupTargetContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => bk.deleteTarget(tx, auth.company.id, params.id, params.target_id),
  }),
  // Metrics
  ...(
    [
      [c.getDatabaseCpuUsageContract, 'cpu-usage'],
      [c.getDatabaseCpuLimitContract, 'cpu-limit'],
      [c.getDatabaseMemoryUsageContract, 'memory-usage'],
      [c.getDatabaseMemoryLimitContract, 'memory-limit'],
      [c.getDatabaseStorageUsageContract, 'storage-usage'],
      [c.getDatabaseStorageLimitContract, 'storage-limit'],
    ] as const
  ).map(([contract, metric]) =>
    defineOperation({
      contract,
      permission: 'DATABASE:READ',
      tier: 'read',
      handler: (async ({ tx, app, auth, params, query }: any) => svc.metric(tx, app, auth.company.id, params.id, metric, query)) as any,
    }),
  ),
  defineOperation({
    contract: c.getDatabaseAllStorageContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async ({ tx, auth, params }) => svc.storageValue(tx, auth.company.id, params.id, 'all'),
  }),
  defineOperation({
    contract: c.getDatabaseUsedStorageContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async ({ tx, auth, params }) => svc.storageValue(tx, auth.company.id, params.id, 'used'),
  }),
];

export function setup(app: AppContext): void {
  app.jobs.register(ops.OPERATION_JOB, ops.operationJob(app));
  app.jobs.register(bk.BACKUP_JOB, bk.backupJob(app));
  app.services.register({ type: 'database', find: (tx, companyId, id) => svc.databaseSummary(tx, companyId, id) });
}
