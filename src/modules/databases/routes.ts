// Operation declarations of the databases area: contract, permission, rate tier, thin handler.
import type { AppContext } from '../../shared/context.js';
import { ref } from '../../shared/http/references.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as bk from './backups.js';
import { registerDatabaseEvents } from './events.js';
import * as ops from './operations.js';
import { registerRuntimeJobs } from './real.js';
import { armSchedules, registerScheduleJobs } from './schedule.js';
import { DatabaseRuntimes, runtimes } from './runtime/index.js';
import * as c from './schemas.js';
import * as svc from './service.js';

export { migrations, tables } from './storage.js';

export const operations = [
  defineOperation({
    contract: c.listDatabasesContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async (r) => svc.listDatabases(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createDatabaseContract,
    permission: 'DATABASE:CREATE',
    tier: 'service_creation',
    references: [ref.project],
    handler: async (r) => svc.createDatabase(r, r.body),
  }),
  defineOperation({
    contract: c.getDatabaseContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async (r) => svc.getDatabase(r, r.params.id),
  }),
  defineOperation({
    contract: c.updateDatabaseContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    references: [ref.project],
    handler: async (r) => svc.updateDatabase(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteDatabaseContract,
    permission: 'DATABASE:DELETE',
    tier: 'service_mutation',
    handler: async (r) => svc.deleteDatabase(r, r.params.id),
  }),
  defineOperation({
    contract: c.activateDatabaseContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.setSuspended(r, r.params.id, false),
  }),
  defineOperation({
    contract: c.suspendDatabaseContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.setSuspended(r, r.params.id, true),
  }),
  defineOperation({
    contract: c.resetDatabasePasswordContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.resetPassword(r, r.params.id, r.body.new_password),
  }),
  defineOperation({
    contract: c.restartDatabaseContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.restartDatabase(r, r.params.id),
  }),
  defineOperation({
    contract: c.restartDatabaseAliasContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.restartDatabase(r, r.params.id),
  }),
  defineOperation({
    contract: c.toggleDatabaseExternalConnectionContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.toggleExternalConnection(r, r.params.id),
  }),
  defineOperation({
    contract: c.getDatabaseIpRestrictionContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async (r) => svc.getIpRestriction(r, r.params.id),
  }),
  defineOperation({
    contract: c.updateDatabaseIpRestrictionContract,
    permission: 'DATABASE:UPDATE',
    tier: 'service_mutation',
    handler: async (r) => svc.updateIpRestriction(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.listDatabaseInternalConnectionsContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async (r) => svc.listConnections(r, r.params.id),
  }),
  defineOperation({
    contract: c.createDatabaseInternalConnectionContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    references: [ref.connectionTarget],
    handler: async (r) => svc.createConnection(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteDatabaseInternalConnectionContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.deleteConnection(r, r.params.id, r.params.connection_id),
  }),
  // Backups
  defineOperation({
    contract: c.listDatabaseBackupsContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async (r) => bk.listBackups(r, r.params.id, r.query.type),
  }),
  defineOperation({
    contract: c.createDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async (r) => bk.createBackup(r, r.params.id, r.body.display_name),
  }),
  defineOperation({
    contract: c.deleteDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async (r) => bk.deleteBackup(r, r.params.id, r.params.backup_id, false),
  }),
  defineOperation({
    contract: c.restoreDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    references: [ref.targetDatabase],
    handler: async (r) => bk.restoreBackup(r, r.params.id, r.params.backup_id, r.body?.target_database_id),
  }),
  defineOperation({
    contract: c.listExternalDatabaseBackupsContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async (r) => bk.listExternalBackups(r, r.params.id),
  }),
  defineOperation({
    contract: c.createExternalDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async (r) => bk.createExternalBackup(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteExternalDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async (r) => bk.deleteBackup(r, r.params.id, r.params.backup_id, true),
  }),
  defineOperation({
    contract: c.restoreExternalDatabaseBackupContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    references: [ref.targetDatabase],
    // The body is required and may be an object or JSON null; the router tells a missing body
    // (400) from a `null` one.
    handler: async (r) => bk.restoreExternalBackup(r, r.params.id, r.params.backup_id, r.body?.target_database_id),
  }),
  defineOperation({
    contract: c.listDatabaseBackupTargetsContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async (r) => bk.listTargets(r, r.params.id),
  }),
  defineOperation({
    contract: c.createDatabaseBackupTargetContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    references: [ref.objectStorage],
    handler: async (r) => bk.createTarget(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.deleteDatabaseBackupTargetContract,
    permission: 'DATABASE:UPDATE',
    tier: 'general_write',
    handler: async (r) => bk.deleteTarget(r, r.params.id, r.params.target_id),
  }),
  // Metrics
  ...c.databaseMetricContracts.map(({ metric, contract }) =>
    defineOperation({
      contract,
      permission: 'DATABASE:READ',
      tier: 'read',
      handler: async (r) => svc.metric(r, r.params.id, metric, r.query),
    }),
  ),
  defineOperation({
    contract: c.getDatabaseAllStorageContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async (r) => svc.storageValue(r, r.params.id, 'all'),
  }),
  defineOperation({
    contract: c.getDatabaseUsedStorageContract,
    permission: 'DATABASE:READ',
    tier: 'read',
    handler: async (r) => svc.storageValue(r, r.params.id, 'used'),
  }),
];

export function setup(app: AppContext): void {
  app.jobs.register(ops.OPERATION_JOB, ops.operationJob(app));
  app.jobs.register(bk.BACKUP_JOB, bk.backupJob(app));
  registerRuntimeJobs(app);
  registerScheduleJobs(app);
  // Reads the SLIPWAY_DB_* settings now: a bad one stops the start.
  app.runtimes.databases = new DatabaseRuntimes(app);
  app.services.register({ type: 'database', summaries: svc.databaseSummaries });
  registerDatabaseEvents(app);
}

/** After the job engine started: arm the backup schedules, bring up the database servers Slipway runs itself (Redis). */
export async function start(app: AppContext): Promise<void> {
  await armSchedules(app);
  await runtimes(app).start();
}
export const stop = (app: AppContext) => runtimes(app).stop();
/** Start-banner lines: which database engines are real. */
export const banner = (app: AppContext) => runtimes(app).banner();
