// Deployment triggers with immediate phases over 50 applications, 20 in flight, after one warm-up
// trigger per application: the first 1,000 (V8 is still optimising the trigger path during them),
// then 3,000 more, the sustained rate. After each burst, the CPU each trigger cost and the time
// until every deployment is final.
import { Agent, request } from 'undici';
import { call } from '../../test/helpers/process.js';
import { type Bench, type Scenario, type Slipway } from '../lib/bench.js';
import { percentile, pool, printLoad, range } from '../lib/load.js';
import { cpuMs, postgresCpuMs } from '../lib/proc.js';
import { int, p99Under, shareOfBare } from '../lib/report.js';

/**
 * The trigger path's speed (its statements, the job hand-over when a trigger supersedes another,
 * the group commit): well above what it was before the performance work (issue #16), with room
 * for a shared machine's noise.
 */
const target = {
  first: { sqlite: 0.02, postgres: 0.025 },
  sustained: { sqlite: 0.03, postgres: 0.03 },
};

const APPS = 50;
const IN_FLIGHT = 20;
const FINAL = new Set(['success', 'failed', 'cancelled', 'skipped']);

export const deployments: Scenario = {
  name: 'deployments',
  async run(b) {
    const s = await b.slipway();
    // undici's request on kept-alive connections: fetch costs the load client several times the
    // CPU per request, taken from the cores the server and its database run on.
    const agent = new Agent({ connections: 32 });
    const trigger = async (id: string) => {
      const r = await request(`${s.base}/v3/applications/${id}/deployments`, {
        method: 'POST',
        dispatcher: agent,
        headers: { ...s.auth, 'content-type': 'application/json' },
        body: '{}',
      });
      const text = await r.body.text();
      return { status: r.statusCode, body: text ? JSON.parse(text) : undefined };
    };
    try {
      const cluster = await b.cluster();
      const appIds = await pool(range(APPS), 10, async (i) => {
        const r = await call(s.base, 'POST', '/applications', s.token, {
          display_name: `Bench app ${i}`,
          cluster_id: cluster,
          source: 'publicGit',
          repo_url: `https://github.com/slipway-bench/app-${i}.git`,
        });
        if (r.status !== 201) throw new Error(`create application: ${r.status} ${JSON.stringify(r.body)}`);
        return r.body.id as string;
      });
      // Unmeasured: the route compiles its validator and serializer on first use.
      const seen = new Set(
        await pool(appIds, IN_FLIGHT, async (id) => {
          const r = await trigger(id);
          if (r.status !== 200) throw new Error(`warm-up deployment: ${r.status} ${JSON.stringify(r.body)}`);
          return r.body.id as string;
        }),
      );
      await drained(b, appIds);
      const bare = await b.reference();
      const results = [];
      for (const [which, title, total] of [
        ['first', 'deployment triggers, first 1,000', 1000],
        ['sustained', 'deployment triggers, next 3,000', 3000],
      ] as const) {
        const r = await burst(b, title, total, appIds, trigger, seen);
        results.push(shareOfBare(title, `${int(r.perSecond)}/s`, r.perSecond / bare, target[which][b.storage]), p99Under(title, r.p99));
      }
      return results;
    } finally {
      await agent.close();
    }
  },
};

/** `total` triggers spread over the applications, then drained; the deployments it made are added to `seen`. */
async function burst(b: Bench, title: string, total: number, appIds: string[], trigger: (id: string) => Promise<{ status: number }>, seen: Set<string>) {
  const s = await b.slipway();
  let firstAccept = 0;
  let rejected = 0;
  const latencies: number[] = [];
  const cpu0 = cpuNow(s);
  const t0 = performance.now();
  await pool(range(total), IN_FLIGHT, async (i) => {
    const start = performance.now();
    const r = await trigger(appIds[i % appIds.length]!);
    const end = performance.now();
    latencies.push(end - start);
    if (r.status === 200) firstAccept ||= end;
    else rejected++;
  });
  const lastAccept = performance.now();
  const cpu = cpuNow(s);
  const accepted = total - rejected;
  const perSecond = accepted / ((lastAccept - t0) / 1000);
  latencies.sort((x, y) => x - y);
  const p99 = percentile(latencies, 99);
  printLoad(title, { rps: perSecond, p99, p50: percentile(latencies, 50), failed: rejected }, 'accepted/s');
  const per = (ms: number) => `${(ms / accepted).toFixed(2)} ms`;
  const postgres = cpu.postgres - cpu0.postgres;
  console.log(
    `  CPU per accepted trigger: server ${per(cpu.server - cpu0.server)}${postgres > 0 ? `, PostgreSQL ${per(postgres)}` : ''}, load client ${per(cpu.client - cpu0.client)}`,
  );
  const finals = await drained(b, appIds);
  const end = performance.now();
  const counts: Record<string, number> = {};
  for (const d of finals) {
    if (seen.has(d.id)) continue;
    seen.add(d.id);
    counts[d.status] = (counts[d.status] ?? 0) + 1;
  }
  const outcome = Object.entries(counts).map(([k, v]) => `${v} ${k}`);
  console.log(
    `  drained ${((end - firstAccept) / 1000).toFixed(2)} s after the first accept, ${((end - lastAccept) / 1000).toFixed(2)} s after the last (${outcome.join(', ')})`,
  );
  return { perSecond, p99 };
}

/** CPU time so far (ms) of the server, of PostgreSQL when it is the storage (NaN otherwise), and of this process, the load client: where a burst's time went on the shared cores. */
function cpuNow(s: Slipway) {
  const client = process.cpuUsage();
  const database = s.databaseUrl && new URL(s.databaseUrl).pathname.slice(1);
  return { server: cpuMs(s.pid), postgres: database ? postgresCpuMs(database) : Number.NaN, client: (client.user + client.system) / 1000 };
}

/** Polls the applications' deployment lists until every deployment is final; returns them all. */
async function drained(b: Bench, appIds: string[]) {
  const s = await b.slipway();
  const pending = new Set(appIds);
  const finals: { id: string; status: string }[] = [];
  const deadline = Date.now() + 300_000;
  while (pending.size) {
    if (Date.now() > deadline) throw new Error(`deployments of ${pending.size} applications did not drain in time`);
    await pool([...pending], 10, async (id) => {
      const r = await call(s.base, 'GET', `/applications/${id}/deployments?limit=100`, s.token);
      if (r.status !== 200) throw new Error(`list deployments: ${r.status} ${JSON.stringify(r.body)}`);
      const list = r.body.data as { id: string; status: string }[];
      if (list.length < r.body.total || !list.every((d) => FINAL.has(d.status))) return;
      pending.delete(id);
      finals.push(...list);
    });
  }
  return finals;
}
