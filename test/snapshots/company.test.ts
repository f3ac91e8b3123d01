// A company's snapshot (GET /_admin/snapshots?company=ID) imported into a server that holds other
// companies: beside them when no value of its rows that is unique across the server (a custom
// domain's hostname, a static site's hostname, a bucket name, ids) is held there; refused (409)
// naming the clash, with nothing written, when one is, and imported once the clash is gone.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { DB_KINDS, GENEROUS, skipUnless, startServer, type DbKind, type TestServer } from '../helpers/server.js';
import { expectError, expectStatus } from '../helpers/util.js';
import { createApp } from '../processes/support.js';
import { createSite } from '../static-sites/support.js';
import { bucketFiles, client, createBucket } from '../object-storage/support.js';
import { SNAPSHOT_ENV } from './support.js';

let labels = 0;
const hostname = (what: string) => `${what}-${process.pid}-${++labels}.example.com`;

/** Every table's row count on `s`, from a whole-server export. */
async function counts(s: TestServer): Promise<Record<string, number>> {
  const doc = expectStatus(await s.admin('GET', '/snapshots?objects=true'), 200);
  return Object.fromEntries(Object.entries(doc.tables as Record<string, unknown[]>).map(([t, rows]) => [t, rows.length]));
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

for (const kind of DB_KINDS) {
  describe(`company snapshot beside other companies [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const servers: TestServer[] = [];
    const serverOf = async (db: DbKind) => {
      const s = await startServer({ db, rateLimits: GENEROUS, env: SNAPSHOT_ENV });
      servers.push(s);
      return s;
    };
    after(async () => {
      for (const s of servers) await s.close();
    });

    it('imports into a server with another company; refuses, writing nothing, when another company holds one of its names', async () => {
      const src = await serverOf(kind);
      const a = await src.newCompany();
      const app = await createApp(src, a.token);
      const shop = hostname('shop');
      expectStatus(await src.post(`/applications/${app}/domains`, { domain_name: shop }, { token: a.token }), 201);
      const site = await createSite(src, {}, a.token);
      const bucket = await createBucket(src, {}, a.token);
      await client(bucket, bucket).send(new PutObjectCommand({ Bucket: bucket.bucket_name, Key: 'k', Body: 'company bytes', ContentType: 'text/plain' }));
      const snapshot = expectStatus(await src.admin('GET', `/snapshots?company=${a.companyId}&objects=true`), 200);
      assert.equal(snapshot.company, a.companyId);
      assert.equal(snapshot.tables.domains.filter((d: { hostname: string }) => d.hostname === shop).length, 1);

      // A server holding another company (its bootstrap one, with an application and a domain of its own): imported beside it.
      const beside = await serverOf(kind);
      const theirs = await createApp(beside);
      const theirHost = hostname('theirs');
      expectStatus(await beside.post(`/applications/${theirs}/domains`, { domain_name: theirHost }), 201);
      expectStatus(await beside.admin('POST', '/snapshots', snapshot), 201);
      expectStatus(await beside.get(`/applications/${app}`, { token: a.token }), 200);
      const domains = expectStatus(await beside.get(`/applications/${app}/domains`, { token: a.token }), 200);
      assert.ok(JSON.stringify(domains).includes(shop), JSON.stringify(domains));
      expectStatus(await beside.get(`/static-sites/${site.id}`, { token: a.token }), 200);
      const got = await client({ endpoint: `${beside.baseUrl}/s3` }, bucket).send(new GetObjectCommand({ Bucket: bucket.bucket_name, Key: 'k' }));
      assert.equal(await got.Body!.transformToString(), 'company bytes');
      expectStatus(await beside.get(`/applications/${theirs}`), 200);

      // A server where another company holds the custom domain's hostname.
      const clash = await serverOf(kind);
      const holder = await createApp(clash);
      const held = expectStatus(await clash.post(`/applications/${holder}/domains`, { domain_name: shop }), 201);
      const before = await counts(clash);
      for (const path of ['/snapshots', '/snapshots?replace=1'])
        expectError(
          await clash.admin('POST', path, snapshot),
          409,
          new RegExp(
            `^Company ${a.companyId} cannot be imported here: .*domains\\.hostname ${escape(shop)} \\(company ${clash.companyId}\\).*Nothing was imported`,
          ),
        );
      assert.deepEqual(await counts(clash), before);
      expectError(await clash.get(`/applications/${app}`, { token: a.token }), 401);
      assert.deepEqual(bucketFiles(clash.app.config.dataDir, bucket.id), []);
      expectStatus(await clash.get(`/applications/${holder}/domains/${held.id}`), 200);
      // Once the other company lets the name go, the same snapshot imports.
      expectStatus(await clash.delete(`/applications/${holder}/domains/${held.id}`), 200);
      expectStatus(await clash.admin('POST', '/snapshots', snapshot), 201);
      expectStatus(await clash.get(`/applications/${app}`, { token: a.token }), 200);

      // The same rows under another company id clash on every name and id they hold, names listed first.
      const other = '00000000-0000-4000-8000-00000000c0de';
      const copy = JSON.parse(JSON.stringify(snapshot).replaceAll(a.companyId, other));
      const beforeCopy = await counts(beside);
      const refused = expectError(await beside.admin('POST', '/snapshots', copy), 409);
      for (const name of [`domains.hostname ${shop}`, `static_sites.hostname ${site.hostname as string}`, `object_storages.bucket_name ${bucket.bucket_name}`])
        assert.ok(refused.includes(`${name} (company ${a.companyId})`), `${name} in: ${refused}`);
      assert.deepEqual(await counts(beside), beforeCopy);
    });
  });
}
