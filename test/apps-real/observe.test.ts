// What a client sees of a locally running application: process metrics measured from /proc, a
// real shell through the process terminal, and the system domain the edge serves.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import type { LocalRuntime } from '../../src/modules/applications/runtime/local/index.js';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, listAll, waitFor } from '../helpers/util.js';
import { createRealApp, deploy, edgeGet, LOCAL_ENV, makeRepo, openTerminal } from './support.js';

/** Resident memory of every process in a process group (bytes), read from /proc here in the test. */
function groupRss(pgid: number): number {
  let total = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== pgid) continue;
      total += Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${name}/status`, 'utf8'))?.[1] ?? 0) * 1024;
    } catch {
      /* gone */
    }
  }
  return total;
}

for (const kind of DB_KINDS) {
  describe(`local runtime: metrics, terminal, domains (${kind})`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, env: LOCAL_ENV, rateLimits: GENEROUS });
    let port: number;
    let app: { id: string; name: string };
    let web: { id: string };
    let deploymentId: string;
    before(async () => {
      port = s.app.runtimes.edge!.port;
      const repo = makeRepo('o1');
      app = await createRealApp(s, repo.url, `observe-${kind}`);
      expectStatus(await s.post(`/applications/${app.id}/env-vars`, { key: 'GREETING', value: 'hello-shell' }), 201);
      const d = await deploy(s, app.id);
      assert.equal(d.status, 'success');
      deploymentId = d.id;
      web = (await listAll<{ id: string }>(s, `/applications/${app.id}/processes`))[0]!;
    });

    it('memory and CPU usage and the instance count come from the running processes', async () => {
      const pid = Number((await edgeGet(port, `${app.name}.localhost`)).body.split(' ')[1]);
      const group = (s.app.runtimes.applications as LocalRuntime).servingGroup(app.id)!.instances[0]!.child!.pid!;
      const now = Date.now();
      const q = `from=${new Date(now - 60_000).toISOString()}&to=${new Date(now + 5_000).toISOString()}&interval_in_seconds=1`;
      const series = async (m: string) =>
        expectStatus<{ time: string; value: number }[]>(await s.get(`/applications/${app.id}/processes/${web.id}/metrics/${m}?${q}`), 200);
      const memory = (await series('memory-usage')).filter((p) => p.value > 0);
      assert.ok(memory.length > 0, 'a measured memory point');
      // The measured figure is the instance's real resident memory (the group: sh and node), within what it moves by.
      const real = groupRss(group);
      const last = memory.at(-1)!.value;
      assert.ok(real > 0 && pid > 0);
      assert.ok(last > real / 2 && last < real * 2, `measured ${last} bytes, /proc says ${real}`);
      const cpu = await series('cpu-usage');
      assert.ok(cpu.every((p) => p.value >= 0));
      assert.ok((await series('instance-count')).some((p) => p.value === 1));
    });

    it('the terminal is a real shell in the release directory with the environment', async () => {
      const t = await openTerminal(s, app.id, web.id);
      t.send('pwd\n');
      t.send('echo "greeting=$GREETING"\n');
      t.send('cat package.json\n');
      await waitFor('the shell output', () => /greeting=hello-shell/.test(t.text) && /"name":"demo"/.test(t.text));
      assert.match(t.text, new RegExp(`/releases/${app.id}/${deploymentId}\\n`));
      t.send('exit 3\n');
      await waitFor('the session to close', () => t.closed !== undefined);
      assert.equal(t.closed, 4003);
    });

    it("the application's system domain is <name>-<hex>.<base domain>; the edge serves it and the short name <name>.<base domain>", async () => {
      const domains = await listAll(s, `/applications/${app.id}/domains`);
      const system = domains.filter((d: { type: string }) => d.type === 'SYSTEM');
      assert.equal(system.length, 1);
      assert.match(system[0].name, new RegExp(`^${app.name}-[0-9a-f]{6}\\.localhost$`));
      assert.equal(domains.length, 1, 'the short name is not listed as a domain');
      assert.equal((await edgeGet(port, system[0].name)).status, 200);
      assert.equal((await edgeGet(port, `${app.name}.localhost`)).status, 200);
    });
  });
}
