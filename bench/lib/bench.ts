// One storage's bench: a Slipway server started on first use (SQLite in a temporary directory, or
// a fresh database on the PostgreSQL server), the data the scenarios need, seeded once, and the
// bare reference route every rate is divided by.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { call, startChild } from '../../test/helpers/process.js';
import { load, median, rounds } from './load.js';
import { freePort } from './proc.js';
import { pct, type Result } from './report.js';

export type Storage = 'sqlite' | 'postgres';
export const storageName: Record<Storage, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

export interface Scenario {
  /** What `npm run bench -- <name>` selects. */
  name: string;
  /** The one storage it runs on, if not both. */
  only?: Storage;
  run(b: Bench): Promise<Result[]>;
}

export interface Slipway {
  base: string;
  token: string;
  auth: Record<string, string>;
  pid: number;
  dir: string;
  databaseUrl?: string;
}

export class Bench {
  private readonly done = new Map<string, Promise<unknown>>();
  private readonly cleanup: (() => unknown)[] = [];

  /** `postgresServer`: a URL of the PostgreSQL server the bench databases are made on. */
  constructor(
    readonly storage: Storage,
    private readonly postgresServer: string,
  ) {}

  /** `fn` run once on this storage; later callers share its result. */
  once<T>(key: string, fn: () => Promise<T>): Promise<T> {
    if (!this.done.has(key)) this.done.set(key, fn());
    return this.done.get(key) as Promise<T>;
  }

  /**
   * The server, with default settings (log level info: one line per request; the default
   * rate-limit store) and the rate limits out of the way.
   */
  slipway = () =>
    this.once('slipway', async (): Promise<Slipway> => {
      const dir = mkdtempSync(join(tmpdir(), 'slipway-bench-'));
      this.cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
      const databaseUrl = this.storage === 'postgres' ? await this.database() : undefined;
      const token = `svl_${randomBytes(32).toString('hex')}`;
      const huge = '1000000000';
      const server = await startChild(
        ['--log-level', 'info'],
        {
          DATA_DIR: dir,
          ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
          SLIPWAY_BOOTSTRAP_TOKEN: token,
          SLIPWAY_RATE_READ: huge,
          SLIPWAY_RATE_GENERAL_WRITE: huge,
          SLIPWAY_RATE_UNAUTHENTICATED: huge,
          SLIPWAY_RATE_SERVICE_CREATION: huge,
          SLIPWAY_RATE_DEPLOYMENT: huge,
          // Deployments advance through their phases without delays (deployments).
          SLIPWAY_SIM_PROGRESSION: '*=immediate',
          // The webhook receiver holds its first answers until every event exists (webhooks).
          SLIPWAY_WEBHOOK_TIMEOUT_MS: '300000',
        },
        30_000,
        false,
      );
      this.cleanup.push(() => server.stop());
      return { base: server.baseUrl, token, auth: { authorization: `Bearer ${token}` }, pid: server.child.pid!, dir, databaseUrl };
    });

  /** A fresh database on the PostgreSQL server, dropped at `close`. */
  private async database(): Promise<string> {
    const admin = new pg.Client({ connectionString: this.postgresServer });
    await admin.connect();
    const name = `slipway_bench_${randomBytes(4).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${name}`);
    this.cleanup.push(async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    });
    const url = new URL(this.postgresServer);
    url.pathname = `/${name}`;
    return url.toString();
  }

  /** The 1,000 projects the list read pages through, created through the API 50 at a time. */
  projects = () =>
    this.once('projects', async () => {
      const s = await this.slipway();
      for (let i = 0; i < 1000; i += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, j) => call(s.base, 'POST', '/projects', s.token, { display_name: `Bench project ${i + j}` })));
      }
      await this.analyze();
    });

  /** The id of the first cluster, which applications are created on. */
  cluster = () =>
    this.once('cluster', async () => {
      const s = await this.slipway();
      return (await call(s.base, 'GET', '/resources/clusters', s.token)).body[0].id as string;
    });

  /**
   * 100,000 resources: 20,000 applications of the bench company written straight into the
   * database (copies of one of its own, for deep offsets), and 80,000 projects of another company.
   */
  resources = () =>
    this.once('resources', async () => {
      const s = await this.slipway();
      let apps = await call(s.base, 'GET', '/applications?limit=1', s.token);
      if (!apps.body.total) {
        const made = await call(s.base, 'POST', '/applications', s.token, {
          display_name: 'Template app',
          cluster_id: await this.cluster(),
          source: 'dockerImage',
          docker_image: 'nginx:1.27',
        });
        if (made.status !== 201) throw new Error(`create application: ${made.status} ${JSON.stringify(made.body)}`);
        apps = await call(s.base, 'GET', '/applications?limit=1', s.token);
      }
      const t0 = Date.now();
      const { seedRows } = await import('./seed.js');
      await seedRows(s, apps.body.data[0].id, 20_000, 80_000);
      await this.analyze();
      console.log(`seeded 20,000 applications (${apps.body.total} before) and 80,000 projects of another company in ${Date.now() - t0} ms`);
    });

  /**
   * PostgreSQL: statistics gathered after a bulk load, as autovacuum would a minute later (a
   * benchmark reads at once). SQLite plans these queries without.
   */
  private async analyze() {
    const { databaseUrl } = await this.slipway();
    if (!databaseUrl) return;
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query('ANALYZE');
    await client.end();
  }

  /** The bare reference route: a Fastify app serving the page `GET /v3/projects` answers (bare-page.mjs), warmed up. */
  bare = () =>
    this.once('bare', async () => {
      const s = await this.slipway();
      await this.projects();
      const file = join(s.dir, 'bare-page.json');
      writeFileSync(file, JSON.stringify((await call(s.base, 'GET', '/projects', s.token)).body));
      const port = await freePort();
      const child = spawn(process.execPath, [fileURLToPath(new URL('./bare-page.mjs', import.meta.url)), '--port', String(port), '--page', file], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = new Promise((r) => child.once('exit', r));
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('listening') && resolve());
        child.once('exit', (code) => reject(new Error(`bare-page.mjs exited with ${code}`)));
      });
      this.cleanup.push(() => (child.kill('SIGTERM'), exited));
      const url = `http://127.0.0.1:${port}/page`;
      await load({ url, duration: 2 });
      return { url, pid: child.pid! };
    });

  /** The bare route's rate now (printed): the reference of the rate measured right after it. */
  async reference(): Promise<number> {
    return (await load({ url: (await this.bare()).url, title: 'bare Fastify route, same 25-item page' })).rps;
  }

  /**
   * A read against the bare route in paired rounds: each round runs the bare route, then the read,
   * so a share compares figures taken seconds apart (a shared machine's speed drifts from minute
   * to minute); the share judged is the median of the rounds'. The read is warmed up for 2 s first,
   * unmeasured: its first seconds would also time V8 compiling its path.
   */
  async pairedShare(title: string, path: string) {
    const s = await this.slipway();
    const url = `${s.base}${path}`;
    await load({ url, headers: s.auth, duration: 2 });
    const shares: number[] = [];
    const rates: number[] = [];
    for (let i = 1; i <= rounds; i++) {
      const bare = await this.reference();
      const read = await load({ url, headers: s.auth, title: `${title} #${i}` });
      rates.push(read.rps);
      shares.push(read.rps / bare);
    }
    console.log(`  shares of bare: ${shares.map(pct).join(', ')}; the median judged`);
    return { rps: median(rates), share: median(shares) };
  }

  /** Stops what was started, last first, and removes its data. */
  async close() {
    for (const undo of this.cleanup.reverse()) await Promise.resolve(undo()).catch((e) => console.log(`cleanup: ${e}`));
  }
}

/** The code `slipway serve` runs: SLIPWAY_RUN_FROM, else bin/slipway.mjs's choice (dist/ unless older than src/). */
export function runsFrom(): 'dist' | 'src' {
  const forced = process.env.SLIPWAY_RUN_FROM;
  if (forced === 'dist' || forced === 'src') return forced;
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const newest = (dir: string): number =>
    Math.max(
      statSync(dir).mtimeMs,
      ...readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs)),
    );
  const dist = join(root, 'dist', 'cli.js');
  return existsSync(dist) && statSync(dist).mtimeMs >= newest(join(root, 'src')) ? 'dist' : 'src';
}
