// Object storage data plane: PUT and GET of 1 MB and 64 MB objects through the AWS SDK v3 against
// the server's S3 endpoint, against the file system's own speed for the same bytes (write +
// fsync, copy + fsync, read) as the ceiling. SQLite only: the objects are files either way.
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { copyFile, open, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { call } from '../../test/helpers/process.js';
import { type Scenario } from '../lib/bench.js';
import { line, pct, type Result } from '../lib/report.js';

const MB = 1024 * 1024;

/** MB/s of `fn` moving `bytes`. */
async function timed(bytes: number, fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return bytes / MB / ((performance.now() - t0) / 1000);
}

async function fsync(path: string) {
  const fh = await open(path, 'r+');
  await fh.sync();
  await fh.close();
}

export const objectStorage: Scenario = {
  name: 'object-storage',
  only: 'sqlite',
  async run(b) {
    const s = await b.slipway();
    const created = await call(s.base, 'POST', '/object-storage', s.token, { display_name: 'Bench bucket' });
    if (created.status !== 201) throw new Error(`create bucket: ${created.status} ${JSON.stringify(created.body)}`);
    const bucket = created.body;
    const s3 = new S3Client({
      endpoint: bucket.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: bucket.access_key, secretAccessKey: bucket.secret_key },
    });
    const results: Result[] = [];
    for (const [size, count] of [
      [MB, 32],
      [64 * MB, 3],
    ] as const) {
      const data = randomBytes(size);
      const total = size * count;
      const key = (i: number) => `bench/${size}/${i}`;
      const put = await timed(total, async () => {
        for (let i = 0; i < count; i++) await s3.send(new PutObjectCommand({ Bucket: bucket.bucket_name, Key: key(i), Body: data }));
      });
      const get = await timed(total, async () => {
        for (let i = 0; i < count; i++) {
          const r = await s3.send(new GetObjectCommand({ Bucket: bucket.bucket_name, Key: key(i) }));
          for await (const _ of r.Body as AsyncIterable<Buffer>);
        }
      });
      const src = join(s.dir, `bench-src-${size}`);
      const write = await timed(total, async () => {
        for (let i = 0; i < count; i++) {
          await writeFile(src, data);
          await fsync(src);
        }
      });
      const copy = await timed(total, async () => {
        for (let i = 0; i < count; i++) {
          await copyFile(src, `${src}-copy`);
          await fsync(`${src}-copy`);
        }
      });
      const read = await timed(total, async () => {
        for (let i = 0; i < count; i++) await readFile(src);
      });
      await rm(src, { force: true });
      await rm(`${src}-copy`, { force: true });
      const label = `S3 ${size / MB} MB objects x ${count}`;
      const f = (x: number) => x.toFixed(0).padStart(5);
      line(label, `PUT ${f(put)} MB/s   GET ${f(get)} MB/s   (file system: write+fsync ${f(write)}, copy+fsync ${f(copy)}, read ${f(read)} MB/s)`);
      results.push({ title: `${label}, PUT`, figure: `${put.toFixed(0)} MB/s`, ratio: `${pct(put / write)} of write+fsync`, target: '' });
      results.push({ title: `${label}, GET`, figure: `${get.toFixed(0)} MB/s`, ratio: `${pct(get / read)} of read`, target: '' });
    }
    s3.destroy();
    return results;
  },
};
