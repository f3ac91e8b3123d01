// Snapshots stream their objects: 300 MiB of bucket objects (more than a snapshot could carry when
// it was one string in memory) go SQLite -> `slipway admin snapshot export --objects` -> a file ->
// `... import` on PostgreSQL -> GET /_admin/snapshots?objects=true -> POST /_admin/snapshots on
// SQLite, and come back byte for byte, while the peak memory of each process that carried them
// (the CLI's, measured by /usr/bin/time; the servers', by /proc's VmHWM) grows by far less than
// their size.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { createPgDatabase, GENEROUS, OPERATOR_TOKEN, skipUnless, startServer } from '../helpers/server.js';
import { BIN, rateEnv, startChild, type ChildServer } from '../helpers/process.js';
import { client, createBucket, type Bucket } from '../object-storage/support.js';
import { SNAPSHOT_ENV } from './support.js';

const MIB = 1024 * 1024;
/** Six objects of 50 MiB: more than the 256 MiB a snapshot could carry in memory. */
const OBJECTS = 6;
const OBJECT_BYTES = 50 * MIB;
const TOTAL = OBJECTS * OBJECT_BYTES;
/** How much more than carrying no objects a process may take at its peak: a small part of TOTAL. */
const HEADROOM = 80 * MIB;

const ENV = {
  SLIPWAY_SECRET_KEY: 'test-secret-key',
  SLIPWAY_OPERATOR_TOKEN: OPERATOR_TOKEN,
  // The whole import's body arrives within one request's time.
  SLIPWAY_REQUEST_TIMEOUT_MS: '600000',
  ...SNAPSHOT_ENV,
};

const dirs: string[] = [];
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'slipway-snapshot-stream-'));
  dirs.push(d);
  return d;
};

/** Runs the CLI under /usr/bin/time -v, stdin from `input` and stdout to `output` (files); answers its peak RSS in bytes. */
async function cli(args: string[], files: { input?: string; output?: string } = {}): Promise<{ rss: number; stdout: string }> {
  const inFd = files.input ? openSync(files.input, 'r') : 'ignore';
  const outFd = files.output ? openSync(files.output, 'w') : 'pipe';
  try {
    const child = spawn('/usr/bin/time', ['-v', process.execPath, BIN, ...args], {
      env: { ...process.env, ...ENV },
      stdio: [inFd, outFd, 'pipe'],
    });
    let err = '';
    let out = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 0, `slipway ${args.join(' ')}:\n${err}`);
    const kb = /Maximum resident set size \(kbytes\): (\d+)/.exec(err);
    assert.ok(kb, err);
    return { rss: Number(kb[1]) * 1024, stdout: out };
  } finally {
    if (typeof inFd === 'number') closeSync(inFd);
    if (typeof outFd === 'number') closeSync(outFd);
  }
}

/** A process's peak resident memory so far (VmHWM), in bytes. */
function peak(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(m);
  return Number(m[1]) * 1024;
}

/** Sends `path`'s content as the body of an operator request (streamed from the file). */
function postFile(baseUrl: string, path: string, file: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}/_admin${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json', 'content-length': statSync(file).size },
    });
    req.once('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.once('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.once('error', reject);
    createReadStream(file).pipe(req);
  });
}

/** Writes an operator GET's response body to `file`, as it arrives. */
async function getToFile(baseUrl: string, path: string, file: string): Promise<number> {
  const res = await fetch(`${baseUrl}/_admin${path}`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
  assert.equal(res.status, 200, path);
  await pipeline(res.body!, createWriteStream(file));
  return res.status;
}

describe('snapshots stream objects larger than memory would hold', { skip: (await skipUnless('postgres')) || false, timeout: 600_000 }, () => {
  it(`carries ${TOTAL / MIB} MiB of objects SQLite -> CLI -> PostgreSQL -> HTTP -> SQLite, byte for byte, in bounded memory`, async (t) => {
    let last = Date.now();
    const step = (what: string) => {
      t.diagnostic(`${what}: ${Date.now() - last} ms`);
      last = Date.now();
    };
    const src = await startServer({ db: 'sqlite', rateLimits: GENEROUS, env: SNAPSHOT_ENV });
    cleanups.push(() => src.close());
    const bucket: Bucket = await createBucket(src);
    const md5s = new Map<string, string>();
    const s3 = client(bucket, bucket);
    for (let i = 0; i < OBJECTS; i++) {
      const body = randomBytes(OBJECT_BYTES);
      md5s.set(`big/${i}.bin`, createHash('md5').update(body).digest('hex'));
      await s3.send(new PutObjectCommand({ Bucket: bucket.bucket_name, Key: `big/${i}.bin`, Body: body, ContentType: 'application/octet-stream' }));
    }
    step('objects stored');
    const work = tmp();
    const file = join(work, 'state.json');
    const dataDir = src.app.config.dataDir;

    // The CLI: export from SQLite, import into PostgreSQL.
    const base = await cli(['admin', 'snapshot', 'export', '--data-dir', dataDir], { output: join(work, 'plain.json') });
    const exported = await cli(['admin', 'snapshot', 'export', '--objects', '--data-dir', dataDir], { output: file });
    step('CLI exports');
    await src.close();
    const size = statSync(file).size;
    assert.ok(size > (TOTAL * 4) / 3, `the file holds the objects in base64 (${size} bytes)`);
    assert.ok(
      exported.rss < base.rss + HEADROOM,
      `exporting ${TOTAL / MIB} MiB took ${Math.round(exported.rss / MIB)} MiB at its peak, without objects ${Math.round(base.rss / MIB)} MiB`,
    );

    const pg = await createPgDatabase();
    cleanups.push(() => pg.drop());
    const pgDir = tmp();
    const imported = await cli(['admin', 'snapshot', 'import', '--database-url', pg.url, '--data-dir', pgDir], { input: file });
    step('CLI import');
    assert.ok(JSON.parse(imported.stdout).rows > 3, imported.stdout);
    assert.ok(
      imported.rss < base.rss + HEADROOM,
      `importing ${TOTAL / MIB} MiB took ${Math.round(imported.rss / MIB)} MiB at its peak, exporting without objects ${Math.round(base.rss / MIB)} MiB`,
    );
    rmSync(file);

    // Over HTTP: export from the PostgreSQL server, import into a fresh SQLite one.
    const servers: ChildServer[] = [];
    cleanups.push(async () => {
      for (const s of servers) await s.stop();
    });
    const onPg = await startChild(['--database-url', pg.url, '--data-dir', pgDir], { ...ENV, ...rateEnv(GENEROUS) });
    servers.push(onPg);
    const before = peak(onPg.child.pid!);
    await getToFile(onPg.baseUrl, '/snapshots?objects=true', file);
    const exportPeak = peak(onPg.child.pid!);
    step('HTTP export');
    await onPg.stop();
    assert.ok(statSync(file).size >= size, 'the same objects');
    assert.ok(
      exportPeak < before + HEADROOM,
      `serving the export grew the server's peak from ${Math.round(before / MIB)} MiB to ${Math.round(exportPeak / MIB)} MiB`,
    );

    const sqliteDir = tmp();
    const onSqlite = await startChild(['--data-dir', sqliteDir], { ...ENV, ...rateEnv(GENEROUS) });
    servers.push(onSqlite);
    const before2 = peak(onSqlite.child.pid!);
    const posted = await postFile(onSqlite.baseUrl, '/snapshots', file);
    assert.equal(posted.status, 201, posted.body);
    const importPeak = peak(onSqlite.child.pid!);
    step('HTTP import');
    assert.ok(
      importPeak < before2 + HEADROOM,
      `reading the import grew the server's peak from ${Math.round(before2 / MIB)} MiB to ${Math.round(importPeak / MIB)} MiB`,
    );
    rmSync(file);

    // Every object, byte for byte (its MD5, read as a stream).
    const s3b = client({ endpoint: `${onSqlite.baseUrl}/s3` }, bucket);
    const listed = ((await s3b.send(new ListObjectsV2Command({ Bucket: bucket.bucket_name }))).Contents ?? []).map((o) => o.Key!);
    assert.deepEqual(listed.sort(), [...md5s.keys()].sort());
    for (const [key, md5] of md5s) {
      const got = await s3b.send(new GetObjectCommand({ Bucket: bucket.bucket_name, Key: key }));
      const h = createHash('md5');
      for await (const c of got.Body as AsyncIterable<Buffer>) h.update(c);
      assert.equal(h.digest('hex'), md5, key);
    }
    step('objects compared');
    t.diagnostic(
      `peak RSS (MiB): CLI export without objects ${Math.round(base.rss / MIB)}, with ${Math.round(exported.rss / MIB)}, CLI import ${Math.round(imported.rss / MIB)}; ` +
        `servers before/after: export ${Math.round(before / MIB)}/${Math.round(exportPeak / MIB)}, import ${Math.round(before2 / MIB)}/${Math.round(importPeak / MIB)}`,
    );
    assert.ok(!existsSync(file));
  });
});
