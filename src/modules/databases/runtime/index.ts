// The databases module's runtime: which engines are real (settings.ts), their drivers, the backup
// store, and the translation of a database row into what a driver needs. One per AppContext.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { AppContext } from '../../../shared/context.js';
import type { Db, Tx } from '../../../shared/db/index.js';
import { findTargetBucket } from '../backups-storage.js';
import { CREATABLE_DATABASE_TYPES } from '../schemas.js';
import { listServedDatabases, type DatabaseBackupsTable, type DatabasesTable, type DatabaseType } from '../storage.js';
import type { DatabaseEngine, Target } from './engine.js';
import { MysqlEngine } from './mysql.js';
import { pgExtensions, PostgresEngine } from './postgres.js';
import { RedisEngine } from './redis.js';
import { FAMILY, runtimeSettings, type EngineFamily, type RuntimeSettings } from './settings.js';
import { runtimeState, serverDatabaseName, type RuntimeState } from './state.js';
import { BucketBackupStore, FileBackupStore, type BackupStore } from './store.js';

export class DatabaseRuntimes {
  readonly settings: RuntimeSettings;
  /** The platform's own backups, and external ones whose target is not one of the platform's buckets. */
  readonly store: FileBackupStore;
  private engines: Partial<Record<EngineFamily, DatabaseEngine>> = {};

  constructor(private app: AppContext) {
    this.settings = runtimeSettings(app.config.databases.env);
    this.store = new FileBackupStore(join(app.config.dataDir, 'database-backups'));
    if (this.settings.postgresql) this.engines.postgresql = new PostgresEngine(this.settings.postgresql);
    if (this.settings.mysql) this.engines.mysql = new MysqlEngine(this.settings.mysql);
    if (this.settings.redis) this.engines.redis = new RedisEngine(this.settings.redis, app.config.dataDir);
  }

  engine(family: EngineFamily): DatabaseEngine {
    const e = this.engines[family];
    // The database was created real; the configuration no longer serves its engine.
    if (!e) throw new Error(`no ${family} server is configured for this database (SLIPWAY_DB_* settings)`);
    return e;
  }

  /** The platform bucket holding a backup (its target's, for an external backup to one), or null: the file store. */
  async bucketOf(db: Db | Tx, b: Pick<DatabaseBackupsTable, 'external' | 'target_id'>): Promise<string | null> {
    if (!b.external || !b.target_id) return null;
    return (await findTargetBucket(db, b.target_id)) ?? null;
  }

  /** The store of backups in this bucket (null: the file store). */
  storeIn = (bucketId: string | null): BackupStore => (bucketId ? new BucketBackupStore(this.app, bucketId, this.store) : this.store);

  /** Whether new databases of this type are created on a real server. */
  isReal = (type: DatabaseType) => !!FAMILY[type] && !!this.engines[FAMILY[type]!];

  /** Start-banner lines: which engines are real. */
  banner(): string[] {
    const real = Object.values(this.engines).map((e) => e.describe());
    // Only the types a database can be created with: listing another would promise what create refuses.
    const simulated = CREATABLE_DATABASE_TYPES.filter((t) => !this.isReal(t));
    return [...real, ...(simulated.length ? [`${simulated.join(', ')}: simulated`] : [])].map((l) => `  Databases: ${l}`);
  }

  /** The runtime record of a new database of this type (undefined: simulated). */
  initialState(type: DatabaseType, id: string, requestedName: string): RuntimeState | undefined {
    const family = FAMILY[type];
    if (!family || !this.engines[family]) return undefined;
    if (family === 'redis') {
      const r = this.settings.redis!;
      // The port is chosen when the create step claims one.
      return {
        family,
        host: r.host,
        port: 0,
        externalHost: r.externalHost,
        externalPort: 0,
        database: requestedName,
        claimed: false,
        admin_enc: this.app.secrets.encrypt(randomBytes(24).toString('hex')),
      };
    }
    const s = this.settings[family]!;
    return {
      family,
      host: s.host,
      port: s.port,
      externalHost: s.externalHost,
      externalPort: s.externalPort,
      database: serverDatabaseName(requestedName, id),
      claimed: false,
    };
  }

  /** What a driver needs to act on the database (with `password` instead of the stored one when given). */
  target(d: DatabasesTable, state: RuntimeState, password?: string): Target {
    return {
      id: d.id,
      database: state.database,
      user: d.db_user,
      password: password ?? this.app.secrets.decrypt(d.password_enc),
      suspended: d.is_suspended === 1,
      extensions: d.type === 'postgresql' ? pgExtensions(JSON.parse(d.extensions) as Record<string, boolean>) : [],
      port: state.port || undefined,
      adminPassword: state.admin_enc ? this.app.secrets.decrypt(state.admin_enc) : undefined,
      access: {
        external: d.external_enabled === 1,
        restriction: d.ip_enabled ? { mode: d.ip_type, entries: JSON.parse(d.ip_list) as string[] } : null,
      },
    };
  }

  /** Brings up the servers Slipway runs itself (Redis): every claimed database not being deleted. */
  async start(): Promise<void> {
    const redis = this.engines.redis;
    if (!redis?.start) return;
    const rows = await listServedDatabases(this.app.database.db);
    const targets = rows.flatMap((d) => {
      const s = runtimeState(d)!;
      return s.family === 'redis' && s.claimed && s.port ? [this.target(d, s)] : [];
    });
    await redis.start(targets);
  }

  async stop(): Promise<void> {
    await Promise.all(Object.values(this.engines).map((e) => e.stop?.()));
  }
}

declare module '../../../shared/context.js' {
  interface Runtimes {
    /** The database engines of this server (real or simulated per type). */
    databases: DatabaseRuntimes;
  }
}

/** The server's database engines (set up once by the module's setup). */
export const runtimes = (app: AppContext): DatabaseRuntimes => app.runtimes.databases;
