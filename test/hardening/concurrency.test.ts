// Every count limit, "one at a time" rule and uniqueness rule under 20 parallel requests: the
// rule holds exactly, and nothing answers 500 (on PostgreSQL a unique violation or an overrun
// limit used to; SQLite runs one write transaction at a time and is checked too).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, type Response, useServer } from '../helpers/server.js';
import { uniqueName } from '../helpers/util.js';
import { DEFAULT_CLUSTER, IMMEDIATE_ENV, addTarget, clearProgression, dbBody, setProgression, waitStatus } from '../databases/support.js';

const N = 20;

/** Sends `n` requests at once; returns the statuses (sorted) and the responses. */
async function burst(n: number, send: (i: number) => Promise<Response>) {
  const rs = await Promise.all(Array.from({ length: n }, (_, i) => send(i)));
  for (const r of rs) assert.ok(r.status < 500, `a ${r.status} under concurrency: ${r.text}`);
  return rs;
}
const count = (rs: Response[], status: number) => rs.filter((r) => r.status === status).length;

for (const kind of DB_KINDS) {
  describe(`limits and uniqueness under ${N} parallel requests [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV, logger: { level: 'error', stream: process.stderr } });

    const app = async (display_name = uniqueName('conc')) => {
      const r = await s.post('/applications', { display_name, cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1' });
      assert.equal(r.status, 201, r.text);
      return r.body as { id: string; name: string };
    };
    const db = async () => {
      const r = await s.post('/databases', dbBody());
      assert.equal(r.status, 201, r.text);
      await waitStatus(s, r.body.id, 'ready');
      return r.body as { id: string };
    };
    const distinctNames = (rs: Response[]) => {
      assert.equal(count(rs, 201), rs.length, 'every create succeeds');
      assert.equal(new Set(rs.map((r) => r.body.name)).size, rs.length, 'every name is different');
    };

    it('applications, clones, databases and projects created with one display name all succeed under distinct names', async () => {
      distinctNames(
        await burst(N, () =>
          s.post('/applications', { display_name: 'Same Name', cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1' }),
        ),
      );
      const src = await app();
      distinctNames(await burst(N, () => s.post(`/applications/${src.id}/clone`, { display_name: 'Same Clone' })));
      distinctNames(await burst(N, () => s.post('/databases', dbBody({ display_name: 'Same Database' }))));
      distinctNames(await burst(N, () => s.post('/projects', { display_name: 'Same Project' })));
    });

    it('backup targets: exactly 5 of 20 are attached', async () => {
      const d = await db();
      const rs = await burst(N, (i) => s.post(`/databases/${d.id}/backup-targets`, { bucket_name: `b-${i}`, access_key: 'AKIA1', secret_key: 'secret1' }));
      assert.equal(count(rs, 202), 5);
      assert.equal(count(rs, 400), N - 5);
      assert.equal((await s.get(`/databases/${d.id}/backup-targets`)).body.length, 5);
    });

    it('backups, external backups and restarts of one database: one at a time', async () => {
      await setProgression(s, 'backup', { mode: 'duration', ms: 60_000 });
      await setProgression(s, 'restart', { mode: 'duration', ms: 60_000 });
      try {
        const a = await db();
        const target = await addTarget(s, a.id, 'one-target');
        const ext = await burst(N, (i) => s.post(`/databases/${a.id}/external-backups`, { name: `dump-${i}`, backup_target_id: target }));
        assert.equal(count(ext, 202), 1, 'one external backup runs; the others are refused while it does');
        const b = await db();
        const snaps = await burst(N, (i) => s.post(`/databases/${b.id}/backups`, { display_name: `snap ${i}` }));
        assert.equal(count(snaps, 202), 1);
        const c = await db();
        const restarts = await burst(N, () => s.post(`/databases/${c.id}/restart`, null));
        assert.equal(count(restarts, 200), 1, 'one restart is accepted, the others see it running');
        assert.equal(count(restarts, 400), N - 1);
      } finally {
        await clearProgression(s, 'backup');
        await clearProgression(s, 'restart');
      }
    });

    it('internal connections, TCP proxies and private ports: one of 20 identical requests wins, the rest are 400', async () => {
      const d = await db();
      const target = await db();
      const conns = await burst(N, () => s.post(`/databases/${d.id}/internal-connections`, { target_id: target.id, target_type: 'database' }));
      assert.equal(count(conns, 201), 1);
      assert.equal(count(conns, 400), N - 1);
      const a = await app();
      const web = (await s.get(`/applications/${a.id}/processes`)).body.data.find((p: { type: string }) => p.type === 'web');
      const proxies = await burst(N, () => s.post(`/applications/${a.id}/tcp-proxies`, { process_id: web.id, port: 5432 }));
      assert.equal(count(proxies, 201), 1);
      assert.equal(count(proxies, 400), N - 1);
      const ports = await burst(N, () => s.post(`/applications/${a.id}/private-ports`, { process_id: web.id, port: 9000 }));
      assert.equal(count(ports, 201), 1);
      assert.equal(count(ports, 400), N - 1);
    });

    it('TCP proxies of different applications in one cluster get distinct external ports', async () => {
      const apps = await Promise.all(Array.from({ length: 8 }, () => app()));
      const webs = await Promise.all(
        apps.map(async (a) => (await s.get(`/applications/${a.id}/processes`)).body.data.find((p: { type: string }) => p.type === 'web')),
      );
      const rs = await burst(apps.length, (i) => s.post(`/applications/${apps[i]!.id}/tcp-proxies`, { process_id: webs[i].id, port: 6379 }));
      assert.equal(count(rs, 201), apps.length);
      assert.equal(new Set(rs.map((r) => r.body.external_port)).size, apps.length);
    });
  });
}
