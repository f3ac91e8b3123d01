// Redis servers from before the tenant's users lost server administration get the new rules when
// Slipway starts: a server an older Slipway left running (adopted, users loaded again) and one that
// is down (started from the users file written anew). `slipway serve` (SQLite) as a child process,
// SIGKILLed so that its servers outlive it.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { waitFor } from '../helpers/util.js';
import { body, crashable, redisBin, withRedis } from './support.js';

const bin = redisBin();

describe(
  'real Redis servers of older Slipway versions get the current user rules',
  { skip: bin.includes('unavailable') ? bin : false, timeout: 300_000 },
  () => {
    const base = 21000 + Math.floor(Math.random() * 20000);
    const h = crashable({ SLIPWAY_DB_REDIS_BIN: bin, SLIPWAY_DB_REDIS_PORTS: `${base}-${base + 5}` });
    const dir = (id: string) => join(h.dir, 'redis', id);
    /** The pid of the database's server process, if it runs. */
    const pidOf = (id: string) => {
      const file = join(dir(id), 'redis.pid');
      const pid = existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : 0;
      return pid && existsSync(`/proc/${pid}`) ? pid : undefined;
    };
    const servers = () => (existsSync(join(h.dir, 'redis')) ? readdirSync(join(h.dir, 'redis')).map(pidOf) : []);

    after(async () => {
      await h.deleteAll().catch(() => {});
      await h.child?.stop('SIGKILL');
      // Servers a failed test left behind: ended by their own pid.
      for (const pid of servers()) if (pid) process.kill(pid, 'SIGKILL');
      rmSync(h.dir, { recursive: true, force: true });
    });

    const tenant = <T>(port: number, fn: (r: Redis) => Promise<T>) => withRedis({ host: '127.0.0.1', port, username: 'tenant', password: 'Rules_pass1' }, fn);
    /** What `CONFIG SET port <its own port>` answers the database's user: 'OK' (old rules) or 'refused'; 'down' without an answer. */
    const configSet = (port: number) =>
      tenant(port, (r) => r.config('SET', 'port', port).catch((e: Error) => (/^NOPERM/.test(e.message) ? 'refused' : e.message))).catch(() => 'down');
    const sanitize = (port: number) => tenant(port, async (r) => ((await r.config('GET', 'sanitize-dump-payload')) as string[])[1]);

    /** Kills the server and starts it (as an older Slipway did) on the users file with the old rules (everything allowed) and the old settings. */
    const oldServer = async (id: string, port: number, start: boolean) => {
      const acl = join(dir(id), 'users.acl');
      writeFileSync(acl, readFileSync(acl, 'utf8').replace(/ ~\*.*$/gm, ' ~* &* +@all'));
      const conf = join(dir(id), 'redis.conf');
      writeFileSync(conf, readFileSync(conf, 'utf8').replace(/^(sanitize-dump-payload|enable-[a-z-]+) .*\n/gm, ''));
      const pid = pidOf(id);
      if (pid) process.kill(pid, 'SIGKILL');
      await waitFor('the server to end', async () => !pidOf(id));
      if (!start) return;
      spawn(bin, [join(dir(id), 'redis.conf')], { stdio: 'ignore', detached: true }).unref();
      await waitFor('the old server', async () => (await configSet(port)) === 'OK');
    };

    it('an adopted server and a stopped one take the rules at start', async () => {
      await h.restart();
      const made = await h.api('POST', '/databases', 201, body('redis', '7', { db_user: 'tenant', password: 'Rules_pass1' }));
      const d = await h.waitFinal(made.id);
      assert.equal(d.status, 'ready');
      const port = Number(d.internal_port);
      assert.equal(await configSet(port), 'refused');

      // Slipway dies; its server runs on with the old rules and is adopted by the next Slipway.
      await h.child!.stop('SIGKILL');
      await oldServer(d.id, port, true);
      assert.equal(await configSet(port), 'OK');
      assert.equal(await sanitize(port), 'no');
      await h.restart();
      await waitFor('the rules on the adopted server', async () => (await configSet(port)) === 'refused', 30_000, 100);
      assert.equal(await sanitize(port), 'clients');

      // The server is down when Slipway starts: it starts on the users file written anew.
      await h.child!.stop('SIGKILL');
      await oldServer(d.id, port, false);
      await h.restart();
      await waitFor('the rules on the started server', async () => (await configSet(port)) === 'refused', 30_000, 100);
      assert.equal(await sanitize(port), 'clients');
    });
  },
);
