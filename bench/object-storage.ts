// Object storage data-plane throughput: PUT and GET of 1 MB and 64 MB objects through the AWS SDK
// v3 against the server's S3 endpoint, next to the file system's own speed for the same bytes
// (write + fsync, copy + fsync, read) as the ceiling.
import { randomBytes } from 'node:crypto';
import { copyFile, open, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { call } from '../test/helpers/process.js';

const MB = 1024 * 1024;

async function timed(bytes: number, fn: () => Promise<void>): Promise<string> {
  const t0 = performance.now();
  await fn();
  return (bytes / MB / ((performance.now() - t0) / 1000)).toFixed(0).padStart(6);
}

async function fsync(path: string) {
  const fh = await open(path, 'r+');
  await fh.sync();
  await fh.close();
}

export async function objectStorageThroughput(base: string, token: string, dir: string): Promise<void> {
  const created = await call(base, 'POST', '/object-storage', token, { display_name: 'Bench bucket' });
  if (created.status !== 201) throw new Error(`create bucket: ${created.status} ${JSON.stringify(created.body)}`);
  const b = created.body;
  const s3 = new S3Client({
    endpoint: b.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: b.access_key, secretAccessKey: b.secret_key },
  });
  for (const [size, count] of [
    [MB, 32],
    [64 * MB, 3],
  ] as const) {
    const data = randomBytes(size);
    const total = size * count;
    const label = `${size / MB} MB objects x ${count}`;
    const put = await timed(total, async () => {
      for (let i = 0; i < count; i++) await s3.send(new PutObjectCommand({ Bucket: b.bucket_name, Key: `bench/${size}/${i}`, Body: data }));
    });
    const get = await timed(total, async () => {
      for (let i = 0; i < count; i++) {
        const r = await s3.send(new GetObjectCommand({ Bucket: b.bucket_name, Key: `bench/${size}/${i}` }));
        for await (const _ of r.Body as AsyncIterable<Buffer>);
      }
    });
    const src = join(dir, `bench-src-${size}`);
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
    console.log(`${`S3 ${label}`.padEnd(44)} PUT ${put} MB/s   GET ${get} MB/s   (file system: write+fsync ${write}, copy+fsync ${copy}, read ${read} MB/s)`);
  }
}
