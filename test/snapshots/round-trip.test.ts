// State snapshots (GET/POST /_admin/snapshots, src/shared/snapshots): a server with one of every
// resource (a bucket's object with its bytes too) exported and imported into a fresh server on the
// other database answers every GET of the contract with the same status and body; the refusals (a server with state, another secret
// key), replace, the company filter, and a job in flight that finishes on the importing server.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { GENEROUS, skipUnless, startServer, type DbKind, type TestServer } from '../helpers/server.js';
import { expectError, expectStatus, waitFor } from '../helpers/util.js';
import { Receiver } from '../webhooks/support.js';
import { createApp } from '../processes/support.js';
import { SNAPSHOT_ENV, getPaths, populate, readAll, type Ids } from './support.js';

/**
 * The reads compared are themselves uses of the key that makes them, which a server records in the
 * key's last_used_at at most once a minute: on a busy machine the importing server's reads come
 * more than a minute after the exporting server's last record. The keys' bodies are compared without it.
 */
function unused(path: string, v: unknown): unknown {
  if (!path.startsWith('/api-keys')) return v;
  const strip = (x: unknown): unknown =>
    Array.isArray(x)
      ? x.map(strip)
      : x && typeof x === 'object'
        ? Object.fromEntries(Object.entries(x).map(([k, y]) => [k, k === 'last_used_at' ? 'a time' : strip(y)]))
        : x;
  return strip(v);
}

/** The tables with the objects' blob names left out: an import stores the bytes under new names. */
const unnamed = (tables: unknown): unknown =>
  Object.fromEntries(
    Object.entries(tables as Record<string, Record<string, unknown>[]>).map(([t, rows]) => [
      t,
      t.startsWith('object_storage_') ? rows.map(({ blob: _blob, ...r }) => r) : rows,
    ]),
  );

const serverOf = (db: DbKind, env: Record<string, string> = {}, port = '0') =>
  startServer({ db, rateLimits: GENEROUS, env: { ...SNAPSHOT_ENV, ...env }, flags: { port } });

for (const [from, to] of [
  ['sqlite', 'postgres'],
  ['postgres', 'sqlite'],
] as [DbKind, DbKind][]) {
  describe(`snapshot round trip ${from} -> ${to}`, { skip: (await skipUnless('postgres')) || false }, () => {
    const rx = new Receiver();
    let src: TestServer;
    let ids: Ids;
    /** The server the first test imported into, holding the same state as `src` had. */
    let imported: TestServer | undefined;
    let snapshot: any;
    before(async () => {
      await rx.start();
      src = await serverOf(from);
      ids = await populate(src, rx);
    });
    after(async () => {
      await src?.close();
      await imported?.close();
      await rx.close();
    });

    it('every GET of the contract answers the same on the importing server', async () => {
      const paths = await getPaths(src, ids);
      const before = await readAll(src, paths, src.token);
      snapshot = expectStatus(await src.admin('GET', '/snapshots?objects=true'), 200);
      assert.equal(snapshot.format, 'slipway-snapshot');
      assert.equal(snapshot.company, null);
      assert.equal(snapshot.objects, true);
      // The importing server listens where the exporting one did: URLs in bodies (object storage
      // endpoints, hook URLs) are built from the server's own address.
      const port = new URL(src.baseUrl).port;
      await src.close();
      imported = await serverOf(to, {}, port);
      const dst = imported;
      const result = expectStatus(await dst.admin('POST', '/snapshots', snapshot), 201);
      assert.ok(result.rows > 20, JSON.stringify(result));
      const after = await readAll(dst, paths, src.token);
      for (const p of paths) assert.deepEqual(unused(p, after[p]), unused(p, before[p]), `GET ${p}`);
      // The importing server's own bootstrap key went with the state it had.
      expectError(await dst.get('/projects'), 401);
      // And its export is the same rows (but for the keys' last use, above, and the names the
      // objects' bytes were stored under), with the same bytes.
      const again = expectStatus(await dst.admin('GET', '/snapshots?objects=true'), 200);
      assert.deepEqual(unnamed(unused('/api-keys', again.tables)), unnamed(unused('/api-keys', snapshot.tables)));
      assert.deepEqual(Object.values(again.blobs).sort(), Object.values(snapshot.blobs).sort());
    });

    it('refuses a server with state unless replacing it, and replaces it', async () => {
      const dst = await serverOf(to);
      try {
        const own = await createApp(dst);
        expectError(await dst.admin('POST', '/snapshots', snapshot), 409, /holds state already \(.*1 applications.*\): import with replace/);
        expectStatus(await dst.get(`/applications/${own}`), 200);
        expectStatus(await dst.admin('POST', '/snapshots?replace=1', snapshot), 201);
        expectError(await dst.get(`/applications/${own}`, { token: src.token }), 404);
        expectStatus(await dst.get(`/applications/${ids['applications']}`, { token: src.token }), 200);
      } finally {
        await dst.close();
      }
    });

    it("exports one company's rows only, and imports them beside another company", async () => {
      const other = await imported!.newCompany();
      const theirs = await createApp(imported!, other.token);
      const snapshot = expectStatus(await imported!.admin('GET', `/snapshots?company=${other.companyId}`), 200);
      assert.equal(snapshot.company, other.companyId);
      assert.deepEqual(
        snapshot.tables.companies.map((c: { id: string }) => c.id),
        [other.companyId],
      );
      assert.deepEqual(
        snapshot.tables.applications.map((a: { id: string }) => a.id),
        [theirs],
      );
      for (const [table, rows] of Object.entries(snapshot.tables as Record<string, { company_id?: string }[]>))
        for (const r of rows) if ('company_id' in r) assert.equal(r.company_id, other.companyId, `${table} row of another company`);
      assert.ok(!('sim_progression' in snapshot.tables), 'server-wide tables are not part of a company snapshot');
      const dst = await serverOf(from);
      try {
        expectStatus(await dst.admin('POST', '/snapshots', snapshot), 201);
        expectStatus(await dst.get(`/applications/${theirs}`, { token: other.token }), 200);
        expectStatus(await dst.get('/projects'), 200); // the importing server's own company stays
        expectError(await dst.admin('POST', '/snapshots', snapshot), 409, /exists on this server/);
        expectStatus(await dst.admin('POST', '/snapshots?replace=1', snapshot), 201);
        expectStatus(await dst.get(`/applications/${theirs}`, { token: other.token }), 200);
      } finally {
        await dst.close();
      }
    });

    it('refuses a snapshot made under another secret key', async () => {
      const dst = await serverOf(to, { SLIPWAY_SECRET_KEY: 'another-secret-key' });
      try {
        expectError(await dst.admin('POST', '/snapshots', snapshot), 400, /encrypted with another secret key .*same SLIPWAY_SECRET_KEY/);
        expectStatus(await dst.get('/projects'), 200);
      } finally {
        await dst.close();
      }
    });
  });

  describe(`snapshot with a job in flight ${from} -> ${to}`, { skip: (await skipUnless('postgres')) || false }, () => {
    it('a deployment exported mid-way finishes on the importing server', async () => {
      // Deployments take their time here: the snapshot catches one in progress, its job queued or running.
      const slow = { SLIPWAY_SIM_PROGRESSION: '*=immediate,deployment=duration:1500' };
      const src = await serverOf(from, slow);
      try {
        const app = await createApp(src);
        const d = expectStatus(await src.post(`/applications/${app}/deployments`, {}), 200);
        const snapshot = expectStatus(await src.admin('GET', '/snapshots'), 200);
        await src.close();
        const jobs = snapshot.tables.jobs as { subject_id: string; status: string }[];
        assert.ok(
          jobs.some((j) => j.subject_id === d.id && ['queued', 'running'].includes(j.status)),
          `the deployment's job is in the snapshot: ${JSON.stringify(jobs)}`,
        );
        const dst = await serverOf(to, slow);
        try {
          expectStatus(await dst.admin('POST', '/snapshots', snapshot), 201);
          await waitFor('the imported deployment to finish', async () => {
            const r = expectStatus(await dst.get(`/applications/${app}/deployments/${d.id}`, { token: src.token }), 200);
            assert.notEqual(r.status, 'failed');
            return r.status === 'success';
          });
        } finally {
          await dst.close();
        }
      } finally {
        await src.close();
      }
    });
  });
}
