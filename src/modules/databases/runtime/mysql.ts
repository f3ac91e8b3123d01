// MySQL and MariaDB: each Slipway database is a database and a user granted only on it, on the
// server of SLIPWAY_DB_MYSQL_URL. The user has one account per host it may connect from (internal
// clients; with external access any host, or the allowlist; denylisted hosts get locked accounts).
// Suspension locks the accounts and kills the user's sessions. Dumps come from mariadb-dump (or
// mysqldump). A restore loads the dump into a scratch database first (a broken dump stops there,
// the database untouched), then swaps the tables in with one RENAME TABLE statement, which the
// server applies whole or not at all, and makes the dump's views, triggers and routines again in
// the database (they cannot be renamed across databases). MariaDB gets password hashes, never the
// password itself, in the statements it might log (MySQL masks them itself).
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as mysql from 'mysql2/promise';
import { lazy } from '../../../shared/lazy.js';
import ipaddr from 'ipaddr.js';
import { isTransient, lastLine, Refused, run, which, type Access, type DatabaseEngine, type Target, type Usage } from './engine.js';
import type { SqlSettings } from './settings.js';

const driver = lazy<typeof mysql>('mysql2/promise');

const id = (s: string) => `\`${s.replace(/`/g, '``')}\``;
/**
 * A database name as a grant takes it. There `_` and `%` match any character: unescaped, a grant on
 * `a_1` would also cover `ax1`, a database the user could create and open, or someone else's that
 * the pattern happens to match.
 */
const pattern = (database: string) => database.replace(/[_%]/g, '\\$&');
/** The tables of one database, as the object of a grant. */
const grantOn = (database: string) => `${id(pattern(database))}.*`;
/** mysql_native_password's hash: `*` and the upper-case hex of SHA1(SHA1(password)). */
const nativeHash = (pw: string) => `*${createHash('sha1').update(createHash('sha1').update(pw).digest()).digest('hex').toUpperCase()}`;

/**
 * An address or CIDR range as the host of a MySQL account: IPv4 ranges in the `net/mask` form the
 * servers take; null for IPv6 ranges, which MySQL and MariaDB cannot express.
 */
export function accountHost(entry: string): string | null {
  if (entry === '%') return entry;
  const [addr, prefix] = entry.split('/') as [string, string | undefined];
  const ip = ipaddr.parse(addr);
  const bits = prefix === undefined ? undefined : Number(prefix);
  if (ip.kind() === 'ipv6') return bits === undefined || bits === 128 ? ip.toString() : null;
  if (bits === undefined || bits === 32) return ip.toString();
  return `${ipaddr.IPv4.networkAddressFromCIDR(entry).toString()}/${ipaddr.IPv4.subnetMaskFromPrefixLength(bits).toString()}`;
}

/**
 * The account hosts of a database's user: `allow` (the internal clients; with external access
 * also the allowlist, or any host) and `deny` (with external access and a denylist: its entries).
 * Entries MySQL cannot express are left out: an allowlist admits less, a denylist refuses less.
 */
export function accountHosts(internal: string[], a: Access): { allow: string[]; deny: string[] } {
  const hosts = (l: string[]) => [...new Set(l.map(accountHost).filter((h): h is string => h !== null))];
  const inside = hosts(internal);
  if (!a.external) return { allow: inside, deny: [] };
  if (a.restriction?.mode === 'allow') return { allow: hosts([...internal, ...a.restriction.entries]), deny: [] };
  const allow = hosts([...internal, '%']);
  return { allow, deny: a.restriction?.mode === 'deny' ? hosts(a.restriction.entries).filter((h) => !allow.includes(h)) : [] };
}

const DEFINER = /DEFINER=`(?:[^`]|``)*`@`(?:[^`]|``)*`/g;

/** Copies a dump with every DEFINER clause naming `definer` (data lines, the INSERTs, are copied as they are). */
async function withDefiner(from: string, to: string, definer: string): Promise<void> {
  const out = createWriteStream(to, { mode: 0o600 });
  const done = new Promise<void>((resolve, reject) => out.on('finish', () => resolve()).on('error', reject));
  for await (const line of createInterface({ input: createReadStream(from), crlfDelay: Infinity })) {
    const text = line.startsWith('INSERT INTO') ? line : line.replace(DEFINER, `DEFINER=${definer}`);
    if (!out.write(`${text}\n`)) await once(out, 'drain');
  }
  out.end();
  await done;
}

/** A view, trigger or routine of a schema, with the statement that makes it and the SQL mode it was made in. */
interface SchemaObject {
  kind: 'VIEW' | 'TRIGGER' | 'PROCEDURE' | 'FUNCTION';
  name: string;
  create: string;
  sqlMode: string | null;
}

/** The views, triggers (in firing order) and routines of a schema, as the server shows them. */
async function schemaObjects(c: mysql.Connection, schema: string): Promise<SchemaObject[]> {
  const out: SchemaObject[] = [];
  const names = async (sql: string) => (await c.query<mysql.RowDataPacket[]>(sql, [schema]))[0].map((r) => [String(r.k), String(r.n)] as const);
  const show = async (kind: SchemaObject['kind'], name: string, column: string) => {
    const [rows] = await c.query<mysql.RowDataPacket[]>(`SHOW CREATE ${kind} ${id(schema)}.${id(name)}`);
    out.push({ kind, name, create: String(rows[0]![column]), sqlMode: rows[0]!.sql_mode === undefined ? null : String(rows[0]!.sql_mode) });
  };
  for (const [k, n] of await names('SELECT ROUTINE_TYPE AS k, ROUTINE_NAME AS n FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ?'))
    await show(k as 'PROCEDURE' | 'FUNCTION', n, k === 'PROCEDURE' ? 'Create Procedure' : 'Create Function');
  for (const [, n] of await names("SELECT 'VIEW' AS k, TABLE_NAME AS n FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ?"))
    await show('VIEW', n, 'Create View');
  for (const [, n] of await names(
    "SELECT 'TRIGGER' AS k, TRIGGER_NAME AS n FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? ORDER BY EVENT_OBJECT_TABLE, ACTION_TIMING, EVENT_MANIPULATION, ACTION_ORDER",
  ))
    await show('TRIGGER', n, 'SQL Original Statement');
  return out;
}

async function dropObjects(c: mysql.Connection, schema: string, objects: SchemaObject[]): Promise<void> {
  for (const o of objects) await c.query(`DROP ${o.kind} IF EXISTS ${id(schema)}.${id(o.name)}`);
}

/**
 * Makes the objects in `schema` (names the server qualified with `from` are moved there too). A
 * view made before one it reads fails: what failed is tried again while each round makes progress.
 */
async function createObjects(c: mysql.Connection, schema: string, objects: SchemaObject[], from?: string): Promise<void> {
  const [[mode]] = await c.query<mysql.RowDataPacket[]>('SELECT @@SESSION.sql_mode AS m');
  await c.query(`USE ${id(schema)}`);
  let left = objects;
  while (left.length) {
    const failed: SchemaObject[] = [];
    let error: unknown;
    for (const o of left) {
      try {
        await c.query('SET SESSION sql_mode = ?', [o.sqlMode ?? String(mode!.m)]);
        await c.query(from ? o.create.split(`${id(from)}.`).join(`${id(schema)}.`) : o.create);
      } catch (e) {
        failed.push(o);
        error = e;
      }
    }
    if (failed.length === left.length) throw error;
    left = failed;
  }
  await c.query('SET SESSION sql_mode = ?', [String(mode!.m)]);
}

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

  private identified = (c: mysql.Connection, password: string) =>
    this.mariadb ? `IDENTIFIED BY PASSWORD ${c.escape(nativeHash(password))}` : `IDENTIFIED BY ${c.escape(password)}`;

  async userExists(t: Target): Promise<boolean> {
    return this.conn(async (c) => (await c.query<mysql.RowDataPacket[]>('SELECT 1 FROM mysql.user WHERE User = ?', [t.user]))[0].length > 0);
  }

  /**
   * Makes the user's accounts (one per host) match the database's access, suspension and
   * `password`: allowed hosts get the password and the grant, denied ones a locked account (the
   * server picks the most specific host, so it wins over `%`), other hosts of the user are dropped.
   * Answers whether access may have narrowed (sessions should then be closed).
   */
  private async syncAccounts(c: mysql.Connection, t: Target, password = t.password): Promise<boolean> {
    const { allow, deny } = accountHosts(this.settings.internalClients, t.access);
    const [rows] = await c.query<mysql.RowDataPacket[]>('SELECT Host FROM mysql.user WHERE User = ?', [t.user]);
    const have = new Set(rows.map((r) => String(r.Host)));
    const want = new Set([...allow, ...deny]);
    const account = (host: string) => `${c.escape(t.user)}@${c.escape(host)}`;
    for (const h of have) if (!want.has(h)) await c.query(`DROP USER IF EXISTS ${account(h)}`);
    // Grants made before database names were escaped (their pattern covered more than the database).
    if (pattern(t.database) !== t.database) {
      const [loose] = await c.query<mysql.RowDataPacket[]>('SELECT Host FROM mysql.db WHERE User = ? AND Db = ?', [t.user, t.database]);
      for (const r of loose) await c.query(`REVOKE ALL PRIVILEGES ON ${id(t.database)}.* FROM ${account(String(r.Host))}`);
    }
    // A re-run after a crash finds the accounts it created (the name was claimed for this database first).
    for (const h of allow) {
      await c.query(`${have.has(h) ? 'ALTER' : 'CREATE'} USER ${account(h)} ${this.identified(c, password)} ACCOUNT ${t.suspended ? 'LOCK' : 'UNLOCK'}`);
      await c.query(`GRANT ALL PRIVILEGES ON ${grantOn(t.database)} TO ${account(h)}`);
    }
    for (const h of deny) {
      if (have.has(h)) await c.query(`REVOKE ALL PRIVILEGES, GRANT OPTION FROM ${account(h)}`);
      await c.query(`${have.has(h) ? 'ALTER' : 'CREATE'} USER ${account(h)} ${this.identified(c, randomBytes(24).toString('hex'))} ACCOUNT LOCK`);
    }
    return deny.length > 0 || [...have].some((h) => !want.has(h));
  }

  async create(t: Target): Promise<void> {
    await this.conn(async (c) => {
      await c.query(`CREATE DATABASE IF NOT EXISTS ${id(t.database)} CHARACTER SET utf8mb4`);
      await this.syncAccounts(c, t);
    });
  }

  async setPassword(t: Target, password: string): Promise<void> {
    await this.conn(async (c) => {
      try {
        await this.syncAccounts(c, t, password);
      } catch (e) {
        if (isTransient(e)) throw e;
        throw new Refused(`the server refused the new password: ${(e as Error).message}`);
      }
    });
  }

  async setAccess(t: Target): Promise<void> {
    await this.conn(async (c) => {
      // Clients that may still connect reconnect; the others are shut out now, not at their next login.
      if (await this.syncAccounts(c, t)) await this.kill(c, t, []);
    });
  }

  /** Kills the sessions of the user and those using the database (their transactions roll back). */
  private async kill(c: mysql.Connection, t: Target, databases = [t.database]): Promise<void> {
    const [rows] = await c.query<mysql.RowDataPacket[]>(
      'SELECT ID FROM information_schema.PROCESSLIST WHERE (USER = ? OR DB IN (?)) AND ID <> CONNECTION_ID()',
      [t.user, databases.length ? databases : ['']],
    );
    for (const r of rows) await c.query(`KILL CONNECTION ${Number(r.ID)}`).catch(() => {}); // already gone
  }

  async setSuspended(t: Target, suspended: boolean): Promise<void> {
    await this.conn(async (c) => {
      await this.syncAccounts(c, { ...t, suspended });
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
    // Views, triggers and routines are made with the database's own user as definer (the dump may
    // come from another database's), who may use the scratch database while the dump loads.
    const { allow } = accountHosts(this.settings.internalClients, t.access);
    const accounts = (c: mysql.Connection) => allow.map((h) => `${c.escape(t.user)}@${c.escape(h)}`).join(', ');
    const input = join(tmpdir(), `slipway-my-${randomBytes(6).toString('hex')}.sql`);
    await withDefiner(file, input, `${id(t.user)}@${id(allow[0] ?? '%')}`);
    await this.conn(async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${id(scratch)}`);
      await c.query(`CREATE DATABASE ${id(scratch)} CHARACTER SET utf8mb4`);
      if (allow.length) await c.query(`GRANT ALL PRIVILEGES ON ${grantOn(scratch)} TO ${accounts(c)}`);
    });
    try {
      const r = await this.withOptions((cnf) => run(this.clientTool!, [`--defaults-extra-file=${cnf}`, '--batch', scratch], { stdin: input }));
      if (r.code !== 0) throw new Refused(`the dump could not be applied: ${lastLine(r.stderr)}`);
      await this.conn(async (c) => {
        const tables = async (schema: string) =>
          (
            await c.query<mysql.RowDataPacket[]>("SELECT TABLE_NAME AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE'", [
              schema,
            ])
          )[0].map((row) => String(row.n));
        const [current, restored] = [await tables(t.database), await tables(scratch)];
        const [had, wanted] = [await schemaObjects(c, t.database), await schemaObjects(c, scratch)];
        await c.query(`DROP DATABASE IF EXISTS ${id(old)}`);
        await c.query(`CREATE DATABASE ${id(old)}`);
        await this.kill(c, t, [t.database, scratch]); // open transactions would hold the tables
        await c.query('SET SESSION lock_wait_timeout = 30');
        // Tables with triggers cannot move to another database, and views never move: the
        // database's own views, triggers and routines go, and the dump's are made again after the swap.
        await dropObjects(
          c,
          scratch,
          wanted.filter((o) => o.kind === 'TRIGGER'),
        );
        await dropObjects(c, t.database, had);
        const moves = [
          ...current.map((n) => `${id(t.database)}.${id(n)} TO ${id(old)}.${id(n)}`),
          ...restored.map((n) => `${id(scratch)}.${id(n)} TO ${id(t.database)}.${id(n)}`),
        ];
        try {
          if (moves.length) await c.query(`RENAME TABLE ${moves.join(', ')}`);
        } catch (e) {
          await createObjects(c, t.database, had).catch(() => {}); // the database as it was
          throw new Refused(`the restored tables could not replace the database's: ${(e as Error).message}`);
        }
        await createObjects(c, t.database, wanted, scratch);
        await c.query(`DROP DATABASE IF EXISTS ${id(old)}`);
      });
    } finally {
      await rm(input, { force: true });
      await this.conn(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS ${id(scratch)}`);
        if (allow.length) await c.query(`REVOKE ALL PRIVILEGES ON ${grantOn(scratch)} FROM ${accounts(c)}`);
      }).catch(() => {});
    }
  }

  async drop(t: Target, ownsUser: boolean): Promise<void> {
    await this.conn(async (c) => {
      for (const name of [t.database, `${t.database}_r`, `${t.database}_o`]) await c.query(`DROP DATABASE IF EXISTS ${id(name)}`);
      if (!ownsUser) return;
      await this.kill(c, t);
      const [rows] = await c.query<mysql.RowDataPacket[]>('SELECT Host FROM mysql.user WHERE User = ?', [t.user]);
      for (const r of rows) await c.query(`DROP USER IF EXISTS ${c.escape(t.user)}@${c.escape(String(r.Host))}`);
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
