// Webhook deliveries to a local receiver (204 at once): one webhook on APP_CREATE, 1,000
// applications created 20 at a time. The receiver holds its answers until every event exists, so
// creating the events does not pace the deliveries (the first attempts wait, the rest queue as
// jobs); the rate runs from then until the last delivery. Two rounds, each with its own webhook:
// the first 1,000 deliveries the server makes (V8 still compiling the delivery path), then 1,000 more.
import { createServer } from 'node:http';
import { call } from '../../test/helpers/process.js';
import { type Bench, type Scenario } from '../lib/bench.js';
import { pool, range } from '../lib/load.js';
import { int, line, shareOfBare } from '../lib/report.js';

/** The delivery path's speed (attempts claimed and completed in batches), in place of a fixed 1,000/s that did not scale with the machine. */
const target = { sqlite: 0.05, postgres: 0.04 };

const TOTAL = 1000;

export const webhooks: Scenario = {
  name: 'webhooks',
  async run(b) {
    const bare = await b.reference();
    const results = [];
    for (const round of ['first', 'next'] as const) {
      const rate = await deliveries(b, round);
      results.push(shareOfBare(`webhook deliveries, ${round} 1,000`, `${int(rate)}/s`, rate / bare, target[b.storage]));
    }
    return results;
  },
};

async function deliveries(b: Bench, round: string): Promise<number> {
  const s = await b.slipway();
  const seen = new Set<string>();
  let last = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  let held: (() => void)[] | undefined = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = () => {
        res.writeHead(204).end();
        last = performance.now();
        seen.add(JSON.parse(Buffer.concat(chunks).toString('utf8')).event_id);
        if (seen.size === TOTAL) done();
      };
      if (held) held.push(answer);
      else answer();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  try {
    const port = (receiver.address() as { port: number }).port;
    const hook = await call(s.base, 'POST', '/webhooks', s.token, { allowed_events: ['APP_CREATE'], endpoint: `http://127.0.0.1:${port}/hook` });
    if (hook.status !== 201) throw new Error(`create webhook: ${hook.status} ${JSON.stringify(hook.body)}`);
    const cluster = await b.cluster();
    const t0 = performance.now();
    await pool(range(TOTAL), 20, async (i) => {
      const r = await call(s.base, 'POST', '/applications', s.token, {
        display_name: `Hook bench ${round} ${i}`,
        cluster_id: cluster,
        source: 'dockerImage',
        docker_image: 'nginx:1.27',
      });
      if (r.status !== 201) throw new Error(`create application: ${r.status} ${JSON.stringify(r.body)}`);
    });
    const created = performance.now();
    const waiting = held!;
    held = undefined;
    for (const answer of waiting) answer();
    // unref: the guard must not keep the bench alive once the deliveries are in.
    await Promise.race([
      all,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${seen.size}/${TOTAL} deliveries arrived`)), 120_000).unref()),
    ]);
    const rate = TOTAL / ((last - created) / 1000);
    const gone = await call(s.base, 'DELETE', `/webhooks/${hook.body.id}`, s.token);
    if (gone.status !== 200) throw new Error(`delete webhook: ${gone.status} ${JSON.stringify(gone.body)}`);
    line(
      `webhook deliveries, ${round} 1,000 (local receiver)`,
      `${rate.toFixed(0).padStart(7)} deliveries/s (events created at ${(TOTAL / ((created - t0) / 1000)).toFixed(0)}/s)`,
    );
    return rate;
  } finally {
    receiver.close();
  }
}
