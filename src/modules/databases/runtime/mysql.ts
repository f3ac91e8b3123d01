// MySQL and MariaDB: each Slipway database is a database and a user ('<user>'@'%') granted only on
// it, on the server of SLIPWAY_DB_MYSQL_URL. Suspension locks the account and kills its sessions.
// Dumps come from mariadb-dump (or mysqldump). A restore loads the dump into a scratch database
// first (a broken dump stops there, the database untouched), then swaps the tables in with one
// RENAME TABLE statement, which the server applies whole or not at all. MariaDB gets password
// hashes, never the password itself, in the statements it might log (MySQL masks them itself).
import { createHash, randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as mysql from 'mysql2/promise';
import { lazy } from '../../../shared/lazy.js';
import { lastLine, Refused, run, which, type DatabaseEngine, type Target, type Usage } from './engine.js';
import type { SqlSettings } from './settings.js';

const driver = lazy<typeof mysql>('mysql2/promise');

const id = (s: string) => `\`${s.replace(/`/g, '``')}\``;
/** mysql_native_password's hash: `*` and the upper-case hex of SHA1(SHA1(password)). */
const nativeHash = (pw: string) => `*${createHash('sha1').update(createHash('sha1').update(pw).digest()).digest('hex').toUpperCase()}`;

export class MysqlEngine implements DatabaseEngine {
  readonly family = 'mysql' as const;
  private dumpTool = which('mariadb-dump') ?? which('mysqldump');
  private clientTool = which('mariadb') ?? which('mysql');
  private mariadb?: boolean;

  constructor(private settings: SqlSettings) {}

  describe(): string {
    const missing = [this.dumpTool ? '' : 'mariadb-dump/mysqldump', this.clientTool ? '' : 'mariadb/mysql'].filter(Boolean);
    return `mysql, mariadb: real on ${this.settings.host}:${this.settings.port}${missing.length ? ` (missing ${missing.join(', ')}: backups and restores fail)` : ''}`;
  }

  private async conn<T>(fn: (c: mysql.Connection) => Promise<T>): Promise<T> {
    const c = await driver().createConnection({ uri: this.settings.url, connectTimeout: 10_000, multipleStatements: false });
    c.on('error', () => {});
    try {
      if (this.mariadb === undefined) {
        const [rows] = await c.query<mysql.RowDataPacket[]>('SELECT VERSION() AS v');
        this.mariadb = /mariadb/i.test(String(rows[0]?.v));
      }
      return await fn(c);
    } catch (e) {
      // mysql2 attaches the statement to its errors: it may hold a password, and errors get logged.
      if (e && typeof e === 'object') delete (e as { sql?: string }).sql;
      throw e;
    } finally {
      await c.end().catch(() => {});
    }
  }

  private account = (c: mysql.Connection, t: Target) => `${c.escape(t.user)}@'%'`;
  private identified = (c: mysql.Connection, password: string) =>
    this.mariadb ? `IDENTIFIED BY PASSWORD ${c.escape(nativeHash(password))}` : `IDENTIFIED BY ${c.escape(password)}`;

  async userExists(t: Target): Promise<boolean> {
    return this.conn(async (c) => (await c.query<mysql.RowDataPacket[]>('SELECT 1 FROM mysql.user WHERE User = ?', [t.user]))[0].length > 0);
  }

  async create(t: Target): Promise<void> {
    await this.conn(async (c) => {
      await c.query(`CREATE DATABASE IF NOT EXISTS ${id(t.database)} CHARACTER SET utf8mb4`);
      const [rows] = await c.query<mysql.RowDataPacket[]>("SELECT 1 FROM mysql.user WHERE User = ? AND Host = '%'", [t.user]);
      // A re-run after a crash finds the user it created (the name was claimed for this database first).
      await c.query(
        `${rows.length ? 'ALTER' : 'CREATE'} USER ${this.account(c, t)} ${this.identified(c, t.password)} ACCOUNT ${t.suspended ? 'LOCK' : 'UNLOCK'}`,
      );
      await c.query(`GRANT ALL PRIVILEGES ON ${id(t.database)}.* TO ${this.account(c, t)}`);
    });
  }

  async setPassword(t: Target, password: string): Promise<void> {
    await this.conn(async (c) => {
      try {
        await c.query(`ALTER USER ${this.account(c, t)} ${this.identified(c, password)}`);
      } catch (e) {
        throw new Refused(`the server refused the new password: ${(e as Error).message}`);
      }
    });
  }

  /** Kills the sessions of the user and those using the database (their transactions roll back). */
  private async kill(c: mysql.Connection, t: Target, databases = [t.database]): Promise<void> {
    const [rows] = await c.query<mysql.RowDataPacket[]>(
      'SELECT ID FROM information_schema.PROCESSLIST WHERE (USER = ? OR DB IN (?)) AND ID <> CONNECTION_ID()',
      [t.user, databases],
    );
    for (const r of rows) await c.query(`KILL CONNECTION ${Number(r.ID)}`).catch(() => {}); // already gone
  }

  async setSuspended(t: Target, suspended: boolean): Promise<void> {
    await this.conn(async (c) => {
      await c.query(`ALTER USER ${this.account(c, t)} ACCOUNT ${suspended ? 'LOCK' : 'UNLOCK'}`);
      if (suspended) await this.kill(c, t);
    });
  }

  async restart(t: Target): Promise<void> {
    await this.conn((c) => this.kill(c, t));
  }

  /** A private option file with the admin credentials (the tools' arguments hold no password). */
  private async withOptions<T>(fn: (file: string) => Promise<T>): Promise<T> {
    const u = new URL(this.settings.url);
    const file = join(tmpdir(), `slipway-my-${randomBytes(6).toString('hex')}.cnf`);
    const q = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
    await writeFile(
      file,
      `[client]\nhost=${q(u.hostname.replace(/^\[|\]$/g, ''))}\nport=${u.port || 3306}\nuser=${q(decodeURIComponent(u.username))}\npassword=${q(decodeURIComponent(u.password))}\nprotocol=TCP\n`,
      { mode: 0o600 },
    );
    try {
      return await fn(file);
    } finally {
      await rm(file, { force: true });
    }
  }

  async dump(t: Target, file: string): Promise<void> {
    if (!this.dumpTool) throw new Refused('mariadb-dump/mysqldump is not installed on the Slipway host');
    const r = await this.withOptions((cnf) =>
      run(
        this.dumpTool!,
        [`--defaults-extra-file=${cnf}`, '--single-transaction', '--skip-lock-tables', '--no-tablespaces', '--routines', '--triggers', t.database],
        { stdout: file },
      ),
    );
    if (r.code !== 0) throw new Refused(`the dump failed: ${lastLine(r.stderr)}`);
  }

  async restore(t: Target, file: string): Promise<void> {
    if (!this.clientTool) throw new Refused('the mariadb/mysql client is not installed on the Slipway host');
    // Deterministic names: a re-run after a crash starts over from the same scratch databases.
    const scratch = `${t.database}_r`;
    const old = `${t.database}_o`;
    await this.conn(async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${id(scratch)}`);
      await c.query(`CREATE DATABASE ${id(scratch)} CHARACTER SET utf8mb4`);
    });
    try {
      const r = await this.withOptions((cnf) => run(this.clientTool!, [`--defaults-extra-file=${cnf}`, '--batch', scratch], { stdin: file }));
      if (r.code !== 0) throw new Refused(`the dump could not be applied: ${lastLine(r.stderr)}`);
      await this.conn(async (c) => {
        const tables = async (schema: string) =>
          (
            await c.query<mysql.RowDataPacket[]>("SELECT TABLE_NAME AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE'", [
              schema,
            ])
          )[0].map((row) => String(row.n));
        const [current, restored] = [await tables(t.database), await tables(scratch)];
        await c.query(`DROP DATABASE IF EXISTS ${id(old)}`);
        await c.query(`CREATE DATABASE ${id(old)}`);
        await this.kill(c, t, [t.database, scratch]); // open transactions would hold the tables
        await c.query('SET SESSION lock_wait_timeout = 30');
        const moves = [
          ...current.map((n) => `${id(t.database)}.${id(n)} TO ${id(old)}.${id(n)}`),
          ...restored.map((n) => `${id(scratch)}.${id(n)} TO ${id(t.database)}.${id(n)}`),
        ];
        try {
          if (moves.length) await c.query(`RENAME TABLE ${moves.join(', ')}`);
        } catch (e) {
          throw new Refused(`the restored tables could not replace the database's: ${(e as Error).message}`);
        }
        await c.query(`DROP DATABASE IF EXISTS ${id(old)}`);
      });
    } finally {
      await this.conn((c) => c.query(`DROP DATABASE IF EXISTS ${id(scratch)}`)).catch(() => {});
    }
  }

  async drop(t: Target, ownsUser: boolean): Promise<void> {
    await this.conn(async (c) => {
      for (const name of [t.database, `${t.database}_r`, `${t.database}_o`]) await c.query(`DROP DATABASE IF EXISTS ${id(name)}`);
      if (!ownsUser) return;
      await this.kill(c, t);
      await c.query(`DROP USER IF EXISTS ${this.account(c, t)}`);
    });
  }

  async usage(t: Target): Promise<Usage> {
    return this.conn(async (c) => {
      const [rows] = await c.query<mysql.RowDataPacket[]>(
        'SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) AS size FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?',
        [t.database],
      );
      return { storage: Number(rows[0]?.size ?? 0), memory: null };
    });
  }
}
