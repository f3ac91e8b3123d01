// The server's RSS with 100,000 resources stored, after reads of the three lists they are in.
import { type Scenario } from '../lib/bench.js';
import { load } from '../lib/load.js';
import { rssMb } from '../lib/proc.js';

/** What a small instance needs: memory does not scale with the machine's speed, so the target is absolute. */
const MAX_MB = 200;

export const memory: Scenario = {
  name: 'memory',
  async run(b) {
    const s = await b.slipway();
    await b.resources();
    for (const path of ['/v3/applications?offset=0', '/v3/applications?offset=10000', '/v3/projects'])
      await load({ url: `${s.base}${path}`, headers: s.auth, title: `GET ${path} (100,000 resources)` });
    const rss = rssMb(s.pid);
    const bare = rssMb((await b.bare()).pid);
    return [
      {
        title: 'RSS, 100,000 resources, after reads',
        figure: `${rss.toFixed(0)} MB`,
        ratio: `${(rss / bare).toFixed(1)}x bare`,
        target: `< ${MAX_MB} MB`,
        ok: rss < MAX_MB,
      },
    ];
  },
};
