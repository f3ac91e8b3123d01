// With 20,000 applications stored (100,000 resources in all): the p99 of a page at offset 10,000
// against the p99 at offset 0, each read warmed up for 2 s first (a list's first deep read also
// reads its bookmarks).
import { type Scenario } from '../lib/bench.js';
import { load } from '../lib/load.js';

/** A deep page costs about what the first does (bookmarks, not a scan of the rows before it). */
const MAX_RATIO = 1.5;

export const deepOffset: Scenario = {
  name: 'deep-offset',
  async run(b) {
    const s = await b.slipway();
    await b.resources();
    const p99 = async (offset: number) => {
      const url = `${s.base}/v3/applications?offset=${offset}`;
      await load({ url, headers: s.auth, duration: 2 });
      return (await load({ url, headers: s.auth, title: `GET /v3/applications?offset=${offset} (20,000+)` })).p99;
    };
    const first = await p99(0);
    const deep = await p99(10_000);
    const ratio = deep / first;
    return [
      {
        title: 'p99 at offset=10000',
        figure: `${deep.toFixed(2)} ms`,
        ratio: `${ratio.toFixed(2)}x offset=0`,
        target: `<= ${MAX_RATIO}x offset=0`,
        ok: ratio <= MAX_RATIO,
      },
    ];
  },
};
