// Redis and Valkey: Redis cannot confine a user to one logical database, so each Slipway database
// is its own server process (SLIPWAY_DB_REDIS_BIN) that Slipway starts, supervises and starts again
// when it exits on its own. Its files live in <data dir>/redis/<database id>/: redis.conf,
// users.acl, dump.rdb and redis.log. Users (users.acl, passwords stored as SHA-256 hashes only):
// `default` with the database's password (what `requirepass` sets), the requested user with the
// same password, both with TENANT_RULES (data, not server administration), and Slipway's own
// `slipway-admin` with every command. Suspension turns the client users off and closes their
// connections; a restart is a real one (SHUTDOWN SAVE, then start); a backup is an RDB snapshot
// (SAVE, after a background save that runs); a restore checks the snapshot with redis-check-rdb (a
// broken one is refused with the data untouched), then replaces dump.rdb while the server is down.
// A server left running by a Slipway process that died is adopted, not started twice, and takes the
// current users and settings.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { basename, dirname, join } from 'node:path';
import type { Redis } from 'ioredis';
import type * as IORedis from 'ioredis';
import { lazy } from '../../../shared/lazy.js';
import { lastLine, Refused, run, which, type DatabaseEngine, type Target, type Usage } from './engine.js';
import type { RedisSettings } from './settings.js';

const ioredis = lazy<typeof IORedis>('ioredis');

export const ADMIN_USER = 'slipway-admin';

/**
 * The rules of the database's users (`default` and the requested one): every key, channel and data
 * command, no server administration. The server is the tenant's own but Slipway runs it: a user who
 * could set its addresses (CONFIG SET bind) would get round external access being off; its port,
 * take another database's port while that one restarts (and its clients); its users (ACL), lock
 * Slipway out; SHUTDOWN, REPLICAOF/SLAVEOF, FAILOVER, SYNC/PSYNC, MODULE, DEBUG, CLUSTER and CONFIG
 * REWRITE/RESETSTAT are Slipway's too. -@admin -@dangerous take them, with MIGRATE (keys sent to any
 * host), CLIENT KILL/PAUSE (Slipway's own connection ended or held) and BGREWRITEAOF (a file the
 * server does not use). Given back: what in those categories only reads the server or touches the
 * tenant's own data, as applications and their libraries (ioredis, BullMQ, Sidekiq, Celery, Rails'
 * cache) use it; ACL WHOAMI/CAT/GENPASS are in neither category. Needs Redis 7 or Valkey (SORT_RO).
 */
export const TENANT_RULES = [
  '~* &* +@all -@admin -@dangerous',
  '+flushdb +flushall +keys +sort +sort_ro +swapdb +restore',
  '+info +config|get +client|list +client|unblock +role +module|list +monitor +slowlog +latency',
  '+save +bgsave +lastsave',
].join(' ');
const ADMIN_RULES = '~* &* +@all';
/**
 * Settings also applied to a running server (one an older Slipway started): the users may RESTORE,
 * so their payloads are checked in full (a crafted one could corrupt the server's memory).
 */
const SERVER_SETTINGS: [string, string][] = [['sanitize-dump-payload', 'clients']];
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether a TCP port can be bound on the address (nothing listens there). */
export function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen({ host, port, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

export class RedisEngine implements DatabaseEngine {
  readonly family = 'redis' as const;
  private checkTool: string | undefined;
  /** Databases whose server should be running, and the processes this Slipway started. */
  private wanted = new Map<string, Target>();
  /** The users (users.acl text) each server is known to run: the last it loaded (loadUsers), while the file still holds them. */
  private loadedUsers = new Map<string, string>();
  private children = new Map<string, ChildProcess>();
  /** One action at a time per database (operations and the supervisor). */
  private queues = new Map<string, Promise<unknown>>();
  private stopping = false;

  constructor(
    private settings: RedisSettings,
    private dataDir: string,
  ) {
    const tool = basename(settings.bin).startsWith('valkey') ? 'valkey-check-rdb' : 'redis-check-rdb';
    this.checkTool = which(join(dirname(settings.bin), tool)) ?? which(tool);
  }

  describe(): string {
    const bin = which(this.settings.bin);
    return `redis, valkey: real, one ${basename(this.settings.bin)} per database on ${this.settings.bind}, ports ${this.settings.ports.join('-')}${bin ? '' : ' (binary not found: creation fails)'}${this.checkTool ? '' : ' (missing redis-check-rdb: restores fail)'}`;
  }

  dir = (t: Pick<Target, 'id'>) => join(this.dataDir, 'redis', t.id);

  private serial<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(id) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const settled = next.catch(() => {});
    this.queues.set(id, settled);
    void settled.then(() => this.queues.get(id) === settled && this.queues.delete(id));
    return next;
  }

  /** A connection as Slipway's admin user (no reconnection: a failure is reported at once). */
  private async admin<T>(t: Target, fn: (r: Redis) => Promise<T>): Promise<T> {
    const r = new (ioredis().Redis)({
      host: this.settings.bind,
      port: t.port!,
      username: ADMIN_USER,
      password: t.adminPassword!,
      lazyConnect: true,
      connectTimeout: 5000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: false,
    });
    r.on('error', () => {});
    try {
      await r.connect();
      return await fn(r);
    } finally {
      r.disconnect();
    }
  }

  /** Whether the database's own server answers on its port (a server of another database would refuse the admin password). */
  private async alive(t: Target): Promise<boolean> {
    try {
      const dir = await this.admin(t, (r) => r.config('GET', 'dir') as Promise<string[]>);
      return dir[1] === this.dir(t);
    } catch {
      return false;
    }
  }

  private acl(t: Target, password = t.password): string {
    const client = t.suspended ? 'off' : 'on';
    const users = new Map([
      [ADMIN_USER, `on #${sha256(t.adminPassword!)} ${ADMIN_RULES}`],
      ['default', `${client} #${sha256(password)} ${TENANT_RULES}`],
      [t.user, `${client} #${sha256(password)} ${TENANT_RULES}`],
    ]);
    return [...users].map(([name, rules]) => `user ${name} ${rules}`).join('\n') + '\n';
  }

  /** The addresses the server listens on: the internal one, and with external access the external one too. */
  private binds(t: Target): string[] {
    const { bind, externalBind } = this.settings;
    if (!t.access.external || externalBind === bind) return [bind];
    // A wildcard covers the internal address (binding both would collide on the port).
    return ['0.0.0.0', '::', '*'].includes(externalBind) ? [externalBind] : [bind, externalBind];
  }

  private async writeFiles(t: Target, password = t.password): Promise<void> {
    const dir = this.dir(t);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const conf = [
      `port ${t.port}`,
      `bind ${this.binds(t).join(' ')}`,
      'protected-mode no',
      'daemonize no',
      `dir ${dir}`,
      'dbfilename dump.rdb',
      'appendonly no',
      'save 3600 1 300 100 60 10000',
      `aclfile ${join(dir, 'users.acl')}`,
      `pidfile ${join(dir, 'redis.pid')}`,
      `logfile ${join(dir, 'redis.log')}`,
      // Redis 7's defaults, stated: no DEBUG, MODULE or change of the protected settings (dir,
      // dbfilename, ...) for any client, whatever the users' rules.
      'enable-debug-command no',
      'enable-module-command no',
      'enable-protected-configs no',
      ...SERVER_SETTINGS.map(([name, value]) => `${name} ${value}`),
    ];
    await writeAtomic(join(dir, 'redis.conf'), conf.join('\n') + '\n');
    const users = this.acl(t, password);
    // Other users on file than the server last loaded: it runs either set until the next load or start.
    if (this.loadedUsers.get(t.id) !== users) this.loadedUsers.delete(t.id);
    await writeAtomic(join(dir, 'users.acl'), users);
  }

  /** Starts the database's server unless it already runs; waits until it answers. */
  private async ensureRunning(t: Target): Promise<void> {
    if (await this.alive(t)) return;
    const dir = this.dir(t);
    const child = spawn(this.settings.bin, [join(dir, 'redis.conf')], { stdio: 'ignore', detached: true });
    child.unref();
    let exited = false;
    child.once('error', () => (exited = true));
    child.once('exit', () => {
      exited = true;
      if (this.children.get(t.id) === child) this.children.delete(t.id);
      // Started again when it went down on its own (not through Slipway) and is still wanted.
      if (!this.stopping && this.wanted.has(t.id)) setTimeout(() => void this.serial(t.id, () => this.supervise(t.id)).catch(() => {}), 500).unref();
    });
    this.children.set(t.id, child);
    for (let i = 0; i < 200; i++) {
      if (exited) break;
      if (await this.alive(t)) return;
      await sleep(50);
    }
    const log = await readFile(join(dir, 'redis.log'), 'utf8').catch(() => '');
    throw new Refused(`the server did not start: ${lastLine(log)}`);
  }

  private async supervise(id: string): Promise<void> {
    const t = this.wanted.get(id);
    if (t && !this.stopping) await this.ensureRunning(t);
  }

  /** Stops the database's server (saving its data first, or not) and waits until it is gone. */
  private async shutdown(t: Target, save: boolean): Promise<void> {
    const child = this.children.get(t.id);
    const gone = child ? new Promise((r) => child.once('exit', r)) : undefined;
    this.children.delete(t.id);
    try {
      await this.admin(t, (r) => r.call('SHUTDOWN', save ? 'SAVE' : 'NOSAVE'));
    } catch {
      // The connection drops when the server exits: expected.
    }
    if (gone) await Promise.race([gone, sleep(10_000)]);
    for (let i = 0; i < 200 && (await this.alive(t)); i++) await sleep(50);
  }

  async userExists(): Promise<boolean> {
    return false; // the server is the database's own
  }

  create(t: Target): Promise<void> {
    return this.serial(t.id, async () => {
      this.wanted.set(t.id, t);
      await this.writeFiles(t);
      await this.ensureRunning(t);
      await this.loadUsers(t); // an adopted server takes the current users
    });
  }

  private async reloadUsers(t: Target, password: string, what: string): Promise<void> {
    // ACL LOAD disconnects every client of the server (Redis 7), even when no user changed: users
    // applied again (a sync that runs twice, an access change, which applies the suspension too)
    // must not drop the database's connections.
    const loaded = this.loadedUsers.get(t.id) === this.acl(t, password);
    await this.writeFiles(t, password);
    if (!loaded) {
      try {
        await this.loadUsers(t, password);
      } catch (e) {
        throw new Refused(`the server refused the ${what}: ${(e as Error).message}`);
      }
    }
    this.wanted.set(t.id, { ...t, password });
  }

  /**
   * Makes the running server take the users on file (written by writeFiles with the same password)
   * and SERVER_SETTINGS: a server an older Slipway started gets the current rules.
   */
  private async loadUsers(t: Target, password = t.password): Promise<void> {
    await this.admin(t, async (r) => {
      for (const [name, value] of SERVER_SETTINGS) await r.config('SET', name, value);
      await r.acl('LOAD'); // last: it closes every connection, this one too (Redis 7)
    });
    this.loadedUsers.set(t.id, this.acl(t, password));
  }

  setPassword(t: Target, password: string): Promise<void> {
    return this.serial(t.id, async () => {
      await this.ensureRunning(t);
      await this.reloadUsers(t, password, 'new password');
    });
  }

  setSuspended(t: Target, suspended: boolean): Promise<void> {
    return this.serial(t.id, async () => {
      const next = { ...t, suspended };
      await this.ensureRunning(next);
      await this.reloadUsers(next, t.password, 'user change');
      if (suspended)
        await this.admin(t, async (r) => {
          for (const user of new Set(['default', t.user])) await r.client('KILL', 'USER', user).catch(() => 0);
        });
    });
  }

  /**
   * External access moves the listening addresses (CONFIG SET bind, no restart). Redis has no rule
   * per client address, so IP restrictions are not enforced.
   */
  setAccess(t: Target): Promise<void> {
    return this.serial(t.id, async () => {
      await this.ensureRunning(t);
      await this.writeFiles(t);
      try {
        await this.admin(t, (r) => r.config('SET', 'bind', this.binds(t).join(' ')));
      } catch (e) {
        throw new Refused(`the server refused the listening addresses: ${(e as Error).message}`);
      }
      this.wanted.set(t.id, t);
    });
  }

  restart(t: Target): Promise<void> {
    return this.serial(t.id, async () => {
      await this.shutdown(t, true);
      await this.writeFiles(t);
      await this.ensureRunning(t);
    });
  }

  dump(t: Target, file: string): Promise<void> {
    return this.serial(t.id, async () => {
      await this.ensureRunning(t);
      await this.admin(t, async (r) => {
        // A background save (a save point's, or the users' BGSAVE) refuses SAVE while it runs.
        for (let wait = 0; ; wait += 100) {
          const saved = await r.save().catch((e: Error) => {
            if (wait >= 120_000 || !/in progress/i.test(e.message)) throw e;
          });
          if (saved) return;
          await sleep(100);
        }
      });
      await copyFile(join(this.dir(t), 'dump.rdb'), file);
    });
  }

  restore(t: Target, file: string): Promise<void> {
    return this.serial(t.id, async () => {
      if (!this.checkTool) throw new Refused('redis-check-rdb is not installed on the Slipway host');
      const check = await run(this.checkTool, [file]);
      if (check.code !== 0)
        throw new Refused(`the snapshot cannot be loaded: ${lastLine(check.stderr) === 'no output' ? 'redis-check-rdb found errors' : lastLine(check.stderr)}`);
      const dir = this.dir(t);
      await copyFile(file, join(dir, 'dump.rdb.restore'));
      await this.shutdown(t, false);
      await rename(join(dir, 'dump.rdb.restore'), join(dir, 'dump.rdb'));
      await this.writeFiles(t);
      await this.ensureRunning(t);
    });
  }

  drop(t: Target): Promise<void> {
    return this.serial(t.id, async () => {
      this.wanted.delete(t.id);
      this.loadedUsers.delete(t.id);
      if (t.port && t.adminPassword) await this.shutdown(t, false);
      await rm(this.dir(t), { recursive: true, force: true });
    });
  }

  usage(t: Target): Promise<Usage> {
    return this.serial(t.id, async () => {
      const info = await this.admin(t, (r) => r.info('memory'));
      const memory = Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
      const storage = await stat(join(this.dir(t), 'dump.rdb')).then(
        (s) => s.size,
        () => 0,
      );
      return { storage, memory };
    });
  }

  async start(targets: Target[]): Promise<void> {
    this.stopping = false;
    for (const t of targets) {
      this.wanted.set(t.id, t);
      await this.serial(t.id, async () => {
        await this.writeFiles(t);
        await this.ensureRunning(t);
        await this.loadUsers(t);
      }).catch(() => {}); // reported when the database is next used
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.wanted.values()].map((t) => this.serial(t.id, () => this.shutdown(t, true)).catch(() => {})));
    this.wanted.clear();
    this.loadedUsers.clear();
  }
}

async function writeAtomic(file: string, content: string): Promise<void> {
  await writeFile(`${file}.tmp`, content, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}
