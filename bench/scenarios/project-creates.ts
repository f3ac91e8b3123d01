// POST /v3/projects for the run's seconds, each with its own name, against the bare route.
import { type Scenario } from '../lib/bench.js';
import { load } from '../lib/load.js';
import { int, p99Under, shareOfBare } from '../lib/report.js';

/**
 * The write path's speed (a transaction, a unique name, the list's counts): well above what it
 * was before the performance work (issue #16), with room for a shared machine's noise.
 */
const target = { sqlite: 0.15, postgres: 0.06 };

export const projectCreates: Scenario = {
  name: 'project-creates',
  async run(b) {
    const s = await b.slipway();
    const bare = await b.reference();
    let n = 0;
    const w = await load({
      url: `${s.base}/v3/projects`,
      title: 'POST /v3/projects',
      requests: [
        {
          method: 'POST',
          headers: { ...s.auth, 'content-type': 'application/json' },
          setupRequest: (req: any) => ({ ...req, body: JSON.stringify({ display_name: `Write bench ${n++}` }) }),
        },
      ],
    });
    return [shareOfBare('POST /v3/projects', `${int(w.rps)}/s`, w.rps / bare, target[b.storage]), p99Under('POST /v3/projects', w.p99)];
  },
};
