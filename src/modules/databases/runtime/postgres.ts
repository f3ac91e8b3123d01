// PostgreSQL: each Slipway database is a role (the requested user, marked with a comment naming the
// Slipway database) and a database it owns, on the server of SLIPWAY_DB_POSTGRESQL_URL. Nobody
// else may connect to it (CONNECT revoked from PUBLIC), and its role opens no other Slipway
// database, nor `postgres` or the templates, which PUBLIC may open by default (`closeShared`).
// Passwords are sent as SCRAM verifiers computed here, so no statement the server might log holds
// a password. Dumps are pg_dump's custom format; a restore turns the dump into SQL first (a broken
// or incompatible dump stops there) and replays it as the owner in one transaction that first
// drops everything the owner had: it commits whole or not at all. External access and IP
// restrictions are recorded, not enforced: that takes pg_hba.conf, which belongs to the server's
// operator, not to Slipway.
import { createHmac, createHash, pbkdf2Sync, randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { pgDriver } from '../../../shared/db/index.js';
import { lastLine, Refused, run, which, type DatabaseEngine, type Target, type Usage } from './engine.js';
import type { SqlSettings } from './settings.js';

/** The SCRAM-SHA-256 verifier of a password (what PostgreSQL stores), in the form ALTER ROLE accepts. */
export function scramVerifier(password: string, salt = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

const EXTENSIONS: Record<string, string> = { enable_vector: 'vector', enable_postgis: 'postgis', enable_cron: 'pg_cron' };
/** The extension names a database's `extensions` flags ask for. */
export const pgExtensions = (flags: Record<string, boolean | undefined>) =>
  Object.entries(flags)
    .filter(([, on]) => on)
    .map(([k]) => EXTENSIONS[k])
    .filter((x): x is string => !!x);

const ident = (s: string) => pgDriver().escapeIdentifier(s);
const literal = (s: string) => pgDriver().escapeLiteral(s);
/** Takes away what every role may do on these databases by default (owners and superusers keep theirs). */
const closeToPublic = (names: string[]) => `REVOKE CONNECT, TEMPORARY ON DATABASE ${names.map(ident).join(', ')} FROM PUBLIC`;

export class PostgresEngine implements DatabaseEngine {
  readonly family = 'postgresql' as const;
  private tools: Record<'pg_dump' | 'pg_restore' | 'psql', string | undefined>;
  private admin: URL;

  constructor(private settings: SqlSettings) {
    this.admin = new URL(settings.url);
    this.tools = { pg_dump: which('pg_dump'), pg_restore: which('pg_restore'), psql: which('psql') };
  }

  describe(): string {
    const missing = Object.entries(this.tools)
      .filter(([, p]) => !p)
      .map(([n]) => n);
    return `postgresql: real on ${this.settings.host}:${this.settings.port}${missing.length ? ` (missing ${missing.join(', ')}: backups and restores fail)` : ''}`;
  }

  /** A client of the admin user, on the admin URL's database or on `database`. */
  private async client<T>(database: string | null, fn: (c: pg.Client) => Promise<T>): Promise<T> {
    const u = new URL(this.admin);
    if (database) u.pathname = `/${encodeURIComponent(database)}`;
    const c = new (pgDriver().Client)({ connectionString: u.toString(), connectionTimeoutMillis: 10_000 });
    c.on('error', () => {}); // a terminated connection is reported by the query that used it
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end().catch(() => {});
    }
  }

  /** Connection variables of the command-line tools (the password never appears in their arguments). */
  private toolEnv(database: string): Record<string, string> {
    const u = this.admin;
    const env: Record<string, string> = {
      PGHOST: decodeURIComponent(u.hostname.replace(/^\[|\]$/g, '')),
      PGPORT: u.port || '5432',
      PGDATABASE: database,
      PGCONNECT_TIMEOUT: '10',
    };
    if (u.username) env.PGUSER = decodeURIComponent(u.username);
    if (u.password) env.PGPASSWORD = decodeURIComponent(u.password);
    const ssl = u.searchParams.get('sslmode');
    if (ssl) env.PGSSLMODE = ssl;
    return env;
  }

  private tool(name: keyof PostgresEngine['tools']): string {
    const p = this.tools[name];
    if (!p) throw new Refused(`${name} is not installed on the Slipway host`);
    return p;
  }

  async userExists(t: Target): Promise<boolean> {
    return this.client(null, async (c) => (await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [t.user])).rowCount! > 0);
  }

  /**
   * A server opens `postgres` and its templates to PUBLIC: any database's user could connect to
   * them. Checked before each creation, so a server's defaults, or a grant made since, never
   * outlive the next one; other databases of the server are its operator's.
   */
  private async closeShared(c: pg.Client): Promise<void> {
    const open = await c.query<{ name: string }>(
      `SELECT datname AS name FROM pg_database WHERE datallowconn AND (datistemplate OR datname = 'postgres')
         AND EXISTS (SELECT 1 FROM aclexplode(coalesce(datacl, acldefault('d', datdba))) a
                     WHERE a.grantee = 0 AND a.privilege_type IN ('CONNECT', 'TEMPORARY'))`,
    );
    if (open.rows.length) await c.query(closeToPublic(open.rows.map((r) => r.name)));
  }

  async create(t: Target): Promise<void> {
    await this.client(null, async (c) => {
      await this.closeShared(c);
      const role = ident(t.user);
      await c.query('BEGIN');
      const exists = (await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [t.user])).rowCount! > 0;
      // A re-run after a crash finds the role it created (the name was claimed for this database first).
      await c.query(
        `${exists ? 'ALTER' : 'CREATE'} ROLE ${role} ${t.suspended ? 'NOLOGIN' : 'LOGIN'} NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD ${literal(scramVerifier(t.password))}`,
      );
      await c.query(`COMMENT ON ROLE ${role} IS ${literal(`Slipway database ${t.id}`)}`);
      await c.query('COMMIT');
      if (!(await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [t.database])).rowCount) {
        try {
          await c.query(`CREATE DATABASE ${ident(t.database)} OWNER ${role}`);
        } catch (e) {
          if ((e as { code?: string }).code !== '42P04') throw e; // created meanwhile by a concurrent run
        }
      }
      await c.query(closeToPublic([t.database]));
      await c.query(`COMMENT ON DATABASE ${ident(t.database)} IS ${literal(`Slipway database ${t.id}`)}`);
    });
    if (t.extensions.length) {
      await this.client(t.database, async (c) => {
        const available = new Set(
          (await c.query<{ name: string }>('SELECT name FROM pg_available_extensions WHERE name = ANY($1)', [t.extensions])).rows.map((r) => r.name),
        );
        // Extensions the server does not have are skipped (the database still works without them).
        for (const x of t.extensions.filter((e) => available.has(e))) await c.query(`CREATE EXTENSION IF NOT EXISTS ${ident(x)}`);
      });
    }
  }

  async setPassword(t: Target, password: string): Promise<void> {
    await this.client(null, async (c) => {
      try {
        await c.query(`ALTER ROLE ${ident(t.user)} PASSWORD ${literal(scramVerifier(password))}`);
      } catch (e) {
        throw new Refused(`the server refused the new password: ${(e as Error).message}`);
      }
    });
  }

  private async terminate(c: pg.Client, t: Target): Promise<void> {
    await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE (datname = $1 OR usename = $2) AND pid <> pg_backend_pid()', [
      t.database,
      t.user,
    ]);
  }

  async setSuspended(t: Target, suspended: boolean): Promise<void> {
    await this.client(null, async (c) => {
      await c.query(`ALTER ROLE ${ident(t.user)} ${suspended ? 'NOLOGIN' : 'LOGIN'}`);
      if (suspended) await this.terminate(c, t);
    });
  }

  async setAccess(): Promise<void> {
    // Recorded only (see the head of this file).
  }

  async restart(t: Target): Promise<void> {
    await this.client(null, (c) => this.terminate(c, t));
  }

  async dump(t: Target, file: string): Promise<void> {
    const r = await run(this.tool('pg_dump'), ['--format=custom', '--no-owner', '--no-privileges', '--file', file], { env: this.toolEnv(t.database) });
    if (r.code !== 0) throw new Refused(`pg_dump failed: ${lastLine(r.stderr)}`);
  }

  async restore(t: Target, file: string): Promise<void> {
    const scratch = join(tmpdir(), `slipway-restore-${t.id}-${randomBytes(4).toString('hex')}`);
    try {
      // 1. The dump's table of contents without extensions (the database's own are Slipway's).
      const list = await run(this.tool('pg_restore'), ['--list', '--file', `${scratch}.list`, file]);
      if (list.code !== 0) throw new Refused(`the dump cannot be read: ${lastLine(list.stderr)}`);
      const toc = (await readFile(`${scratch}.list`, 'utf8')).split('\n').filter((l) => !/^\d+;.* EXTENSION /.test(l));
      await writeFile(`${scratch}.list`, toc.join('\n'), { mode: 0o600 });
      // 2. As SQL: a dump pg_restore cannot read (broken, from a newer version) stops here.
      const script = await run(this.tool('pg_restore'), ['--no-owner', '--no-privileges', '--use-list', `${scratch}.list`, '--file', `${scratch}.sql`, file]);
      if (script.code !== 0) throw new Refused(`the dump cannot be read: ${lastLine(script.stderr)}`);
      // 3. One transaction, as the owner: drop what it had, replay the dump.
      const role = ident(t.user);
      await writeFile(`${scratch}.pre.sql`, `SET ROLE ${role};\nDROP OWNED BY ${role} CASCADE;\n`, { mode: 0o600 });
      await this.restart(t); // open sessions would hold locks on the tables being replaced
      const r = await run(
        this.tool('psql'),
        ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '--single-transaction', '-f', `${scratch}.pre.sql`, '-f', `${scratch}.sql`],
        { env: this.toolEnv(t.database) },
      );
      if (r.code !== 0) throw new Refused(`the dump could not be applied: ${lastLine(r.stderr)}`);
    } finally {
      await Promise.all(['.list', '.sql', '.pre.sql'].map((x) => rm(scratch + x, { force: true })));
    }
  }

  async drop(t: Target, ownsUser: boolean): Promise<void> {
    await this.client(null, async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${ident(t.database)} WITH (FORCE)`);
      if (!ownsUser) return;
      await this.terminate(c, t);
      await c.query(`DROP ROLE IF EXISTS ${ident(t.user)}`);
    });
  }

  async usage(t: Target): Promise<Usage> {
    return this.client(null, async (c) => {
      const r = await c.query<{ size: string | null }>('SELECT pg_database_size(datname)::text AS size FROM pg_database WHERE datname = $1', [t.database]);
      return { storage: Number(r.rows[0]?.size ?? 0), memory: null };
    });
  }
}
