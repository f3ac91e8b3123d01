// Through the edge to a small app (issue #47): the edge as Slipway configures it (one `upstream`
// host, routed by Host, one worker) against Debian's nginx with one worker and a plain
// configuration proxying to the same app, 50 connections, in paired rounds. The app alone is
// measured too, for scale.
import { type Scenario } from '../lib/bench.js';
import { Cleanup, compareEdge, EDGE_CONNECTIONS, edgeHost, edgeSubject, referenceNginx, startApp } from '../lib/edge.js';
import { load } from '../lib/load.js';
import { int, pct, type Result } from '../lib/report.js';

/** A proxy made for the job: within 80% of nginx's rate, and its slowest answers within 2x nginx's. */
const MIN_SHARE = 0.8;
const MAX_P99_RATIO = 2;

export const edgeProxy: Scenario = {
  name: 'edge-proxy',
  only: 'sqlite',
  async run() {
    const cleanup = new Cleanup();
    try {
      const app = cleanup.keep(await startApp());
      const upstream = `127.0.0.1:${app.port}`;
      const nginx = await referenceNginx({ upstream }, cleanup);
      const edge = await edgeSubject([edgeHost('app.bench.test', { type: 'upstream', servers: [{ address: upstream, weight: 1 }] })], cleanup);
      await load({ url: app.url, connections: EDGE_CONNECTIONS, duration: 2 });
      await load({ url: app.url, connections: EDGE_CONNECTIONS, title: `direct to the app (${EDGE_CONNECTIONS} connections)` });
      const r = await compareEdge(
        { title: 'nginx proxying, plain config', url: nginx.url, headers: nginx.headers, cpu: nginx.cpu },
        { title: `${edge.title} proxying, rendered config`, url: edge.url, headers: edge.headers, cpu: edge.cpu },
      );
      console.log(`  the edge's access log: ${await edge.accessLog()}`);
      const title = 'edge proxy to a small app';
      const results: Result[] = [
        { title: `nginx proxying the same app`, figure: `${int(r.reference.rps)} req/s`, ratio: `p99 ${r.reference.p99.toFixed(2)} ms`, target: '' },
        {
          title,
          figure: `${int(r.subject.rps)} req/s`,
          ratio: `${pct(r.share)} of nginx`,
          target: `>= ${pct(MIN_SHARE)} of nginx`,
          ok: r.share >= MIN_SHARE && r.failed === 0,
        },
        {
          title: `${title}, p99`,
          figure: `${r.subject.p99.toFixed(2)} ms`,
          ratio: `${r.p99Ratio.toFixed(2)}x nginx`,
          target: `<= ${MAX_P99_RATIO}x nginx`,
          ok: r.p99Ratio <= MAX_P99_RATIO,
        },
      ];
      return results;
    } finally {
      await cleanup.run();
    }
  },
};
