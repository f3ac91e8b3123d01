// Load balancers on the edge (SLIPWAY_RUNTIME=local): weighted split over two real applications,
// toggling, passive health when one's processes are killed, geographic routing, nested load
// balancers and external URLs, and the real traffic metrics and access logs of what went through.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { before, describe, it } from 'node:test';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { createRealApp, deploy, edgeGet, LOCAL_ENV, makeRepo } from '../apps-real/support.js';
import { addDestination, createLb, destinationPath } from '../load-balancers/support.js';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { client, createBucket } from '../object-storage/support.js';

const noGit = spawnSync('git', ['--version']).status === 0 ? false : 'git is not available';
const ENV = { ...LOCAL_ENV, SLIPWAY_EDGE_GEO_HEADER: 'X-Test-Geo', SLIPWAY_EDGE_COUNTRY_HEADER: 'x-test-country' };

/** The process group of a pid (field 5 of /proc/<pid>/stat). */
const pgidOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2]);

/** `n` GETs through the edge (`parallel` at a time); the first word of each body, or the failure. */
async function many(port: number, host: string, n: number, parallel = 8, headers: Record<string, string> = {}) {
  const out: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < n) {
        next++;
        try {
          const r = await edgeGet(port, host, headers);
          out.push(r.status === 200 ? r.body.split(' ')[0]! : `${r.status} ${r.body.slice(0, 80)}`);
        } catch (e) {
          out.push(`error ${(e as Error).message}`);
        }
      }
    }),
  );
  return out;
}
const count = (xs: string[], v: string) => xs.filter((x) => x === v).length;

/** A GET of `path` through the edge. */
const edgePath = (port: number, host: string, path: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host }, agent: false }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });

for (const kind of DB_KINDS) {
  describe(`load balancers on the edge (${kind})`, { skip: noGit || (await skipUnless(kind)) }, () => {
    const s = useServer({ db: kind, env: ENV });
    let port: number;
    let a: { id: string; name: string };
    let b: { id: string; name: string };
    before(async () => {
      port = s.app.runtimes.edge!.port;
      a = await createRealApp(s, makeRepo('A').url, `lb-real-${kind}-a`);
      b = await createRealApp(s, makeRepo('B').url, `lb-real-${kind}-b`);
      assert.equal((await deploy(s, a.id)).status, 'success');
      assert.equal((await deploy(s, b.id)).status, 'success');
    });

    it('splits by weight (1:3), sends nothing to a disabled destination, and counts the requests in metrics and access logs', async () => {
      const from = new Date(Date.now() - 60_000).toISOString();
      const lb = await createLb(s);
      const host = `${lb.name}.localhost`;
      const da = await addDestination(s, lb.id, { service_type: 'APP', service_id: a.id, weight: 1 });
      await addDestination(s, lb.id, { service_type: 'APP', service_id: b.id, weight: 3 });
      const seen = await many(port, host, 1000);
      assert.equal(
        count(seen, 'A') + count(seen, 'B'),
        1000,
        seen
          .filter((x) => x !== 'A' && x !== 'B')
          .slice(0, 3)
          .join('; '),
      );
      const shareA = count(seen, 'A') / 1000;
      assert.ok(Math.abs(shareA - 0.25) <= 0.05, `A got ${shareA * 100}%`);

      // The applications' metrics and access logs count what the edge served them.
      const to = () => new Date(Date.now() + 60_000).toISOString();
      const q = () => `from=${from}&to=${to()}`;
      const sum = (pts: { value: number }[]) => pts.reduce((n, p) => n + p.value, 0);
      // Records are written in batches (every 500 requests or every second), so A's and B's last
      // ones may land in different batches: wait for both.
      for (const [label, app] of [
        ['A', a],
        ['B', b],
      ] as const)
        await waitFor(
          `the records of ${label}`,
          async () => sum(expectStatus(await s.get(`/applications/${app.id}/metrics/requests-per-minute?${q()}`), 200)) === count(seen, label),
        );
      const pages = expectStatus(await s.get(`/applications/${b.id}/metrics/top-pages?${q()}`), 200);
      assert.deepEqual(pages, [{ page: '/', total: count(seen, 'B') }]);
      const codes = expectStatus(await s.get(`/applications/${b.id}/metrics/top-status-codes?${q()}`), 200);
      assert.deepEqual(codes, [{ status: '200', total: count(seen, 'B') }]);
      const avg = expectStatus(await s.get(`/applications/${a.id}/metrics/response-time-avg?${q()}`), 200);
      assert.ok(avg.average_response_time_ms > 0);
      const logs = expectStatus(await s.get(`/applications/${a.id}/access-logs?from=${from}&to=${to()}&limit=5000`), 200);
      const lines = (Array.isArray(logs) ? logs : logs.data) as { message: string; attributes: { status: number; host: string } }[];
      assert.equal(lines.length, count(seen, 'A'));
      assert.match(lines[0]!.message, new RegExp(`"GET / HTTP/1.1" 200 \\d+ \\d+ms ${host.replace(/\./g, '\\.')}`));

      // Disabled: everything goes to the other destination.
      expectStatus(await s.post(`${destinationPath(lb.id, da.id)}/toggle`), 200);
      const afterToggle = await many(port, host, 100);
      assert.equal(count(afterToggle, 'B'), 100);
    });

    it('keeps serving from the other destination while one application is killed (no failed GET)', async () => {
      const lb = await createLb(s);
      const host = `${lb.name}.localhost`;
      await addDestination(s, lb.id, { service_type: 'APP', service_id: a.id, weight: 1 });
      await addDestination(s, lb.id, { service_type: 'APP', service_id: b.id, weight: 1 });
      const pid = Number((await edgeGet(port, `${a.name}.localhost`)).body.split(' ')[1]);
      process.kill(-pgidOf(pid), 'SIGKILL');
      const seen = await many(port, host, 200, 4);
      assert.deepEqual(
        seen.filter((x) => x !== 'A' && x !== 'B'),
        [],
      );
      assert.ok(count(seen, 'B') > 100, `B served ${count(seen, 'B')} of 200 while A restarted`);
      // A comes back (the supervisor restarts it) and gets traffic again once its pause is over.
      await waitFor('A restarted', async () => (await edgeGet(port, `${a.name}.localhost`)).status === 200, 20_000);
    });

    it('geographic mode picks the destination nearest the client, by coordinates or country', async () => {
      const lb = await createLb(s, { type: 'GEO' });
      const host = `${lb.name}.localhost`;
      await addDestination(s, lb.id, { service_type: 'APP', service_id: a.id, latitude: 48.85, longitude: 2.35 }); // Paris
      await addDestination(s, lb.id, { service_type: 'APP', service_id: b.id, latitude: 40.71, longitude: -74.0 }); // New York
      const at = async (headers: Record<string, string>) => (await edgeGet(port, host, headers)).body.split(' ')[0];
      assert.equal(await at({ 'x-test-geo': '51.5,-0.12' }), 'A'); // London
      assert.equal(await at({ 'x-test-geo': '34.05,-118.24' }), 'B'); // Los Angeles
      assert.equal(await at({ 'x-test-country': 'de' }), 'A');
      assert.equal(await at({ 'x-test-country': 'BR' }), 'B');
      // The country header is the country of the access logs and metrics.
      const window = `from=${new Date(Date.now() - 60_000).toISOString()}&to=${new Date(Date.now() + 60_000).toISOString()}`;
      await waitFor('DE among the countries of A', async () => {
        const countries = expectStatus(await s.get(`/applications/${a.id}/metrics/top-countries?${window}&limit=100`), 200) as {
          country: string;
          total: number;
        }[];
        return countries.find((c) => c.country === 'DE')?.total === 1;
      });
      // Without a location: the weighted choice (both destinations have the default weight).
      const seen = await many(port, host, 20, 2);
      assert.equal(count(seen, 'A'), 10);
      assert.equal(count(seen, 'B'), 10);
    });

    it('forwards to another load balancer, to an external URL (its path prefixing the request) and to a bucket', async () => {
      let upstream: Server | undefined;
      try {
        upstream = createServer((req, res) => res.end(`EXT ${req.url} ${req.headers.host}`));
        await new Promise<void>((r) => upstream!.listen(0, '127.0.0.1', () => r()));
        const upPort = (upstream.address() as { port: number }).port;
        const inner = await createLb(s);
        await addDestination(s, inner.id, { service_type: 'EXTERNAL', url: `http://127.0.0.1:${upPort}/base` });
        const outer = await createLb(s);
        await addDestination(s, outer.id, { service_type: 'LOAD_BALANCER', service_id: inner.id });
        const r = await edgeGet(port, `${outer.name}.localhost`);
        assert.equal(r.status, 200);
        assert.equal(r.body, `EXT /base/ 127.0.0.1:${upPort}`);
        // A bucket's public objects (through its CDN domain); a private bucket answers nothing: 502.
        const bucket = await createBucket(s, { public_access: true });
        await client(bucket, bucket).send(new PutObjectCommand({ Bucket: bucket.bucket_name, Key: 'site/index.html', Body: '<h1>hi</h1>' }));
        const files = await createLb(s);
        await addDestination(s, files.id, { service_type: 'OBJECT_STORAGE', service_id: bucket.id });
        assert.deepEqual(await edgePath(port, `${files.name}.localhost`, '/site/index.html'), { status: 200, body: '<h1>hi</h1>' });
        assert.equal((await edgePath(port, `${files.name}.localhost`, '/site/missing.html')).status, 404);
        const closed = await createBucket(s);
        const shut = await createLb(s);
        await addDestination(s, shut.id, { service_type: 'OBJECT_STORAGE', service_id: closed.id });
        assert.equal((await edgePath(port, `${shut.name}.localhost`, '/x')).status, 502);
        // A load balancer without enabled destinations answers 502.
        const empty = await createLb(s);
        assert.equal((await edgeGet(port, `${empty.name}.localhost`)).status, 502);
      } finally {
        upstream?.close();
      }
    });
  });
}
