// Idle keep-alive connections held by the edge (issue #47): a normal client's p99 through the edge to
// a small app (50 connections) with 10,000 idle keep-alive connections open to it, against its p99
// with none, measured before they open and after they close (the mean of the two is the reference).
// The idle connections are held by a process of their own (idle-holder.mjs), each after one answered
// request. Every process has an open file limit: the holder's is raised to what it needs (as
// `ulimit -n` may, up to the hard limit) and the edge is rendered with worker_connections and
// worker_rlimit_nofile to match; where the hard limit is too low, as many as fit are opened.
import { type Scenario } from '../lib/bench.js';
import { Cleanup, EDGE_CONNECTIONS, edgeHost, edgeSubject, holdIdle, openFileLimits, startApp } from '../lib/edge.js';
import { load } from '../lib/load.js';
import { int, type Result } from '../lib/report.js';

const IDLE = 10_000;
/** The idle connections do not slow the others: p99 within 2x of the p99 with none. */
const MAX_P99_RATIO = 2;
/** Files a process needs besides the idle connections: the holder's own, and the edge worker's (listeners, the load's connections and their upstreams, logs). */
const HOLDER_SPARE = 256;
const EDGE_SPARE = 1024;

export const edgeIdle: Scenario = {
  name: 'edge-idle',
  only: 'sqlite',
  async run() {
    const cleanup = new Cleanup();
    try {
      const { soft, hard } = openFileLimits();
      const idle = Math.max(0, Math.min(IDLE, hard - EDGE_SPARE, hard - HOLDER_SPARE));
      const workerConnections = idle + EDGE_SPARE;
      const openFiles = Math.min(hard, 2 * workerConnections);
      const holderFiles = Math.min(hard, idle + HOLDER_SPARE);
      console.log(
        `open file limit ${int(soft)} (hard ${int(hard)}) per process; the edge: worker_connections ${int(workerConnections)}, worker_rlimit_nofile ${int(openFiles)}; the holder: ulimit -n ${int(holderFiles)}`,
      );
      if (idle < IDLE)
        console.log(`only ${int(idle)} idle connections fit: ${int(IDLE)} need a hard open file limit of ${int(IDLE + EDGE_SPARE)} (ulimit -Hn) for each end`);
      const app = cleanup.keep(await startApp());
      const edge = await edgeSubject([edgeHost('app.bench.test', { type: 'upstream', servers: [{ address: `127.0.0.1:${app.port}`, weight: 1 }] })], cleanup, {
        workerConnections,
        openFiles,
      });
      const client = (title?: string) => load({ url: edge.url, headers: edge.headers, connections: EDGE_CONNECTIONS, title });
      await load({ url: edge.url, headers: edge.headers, connections: EDGE_CONNECTIONS, duration: 2 });
      const before = await client(`${edge.title}, no idle connections`);

      const t0 = performance.now();
      const held = await holdIdle(edge, idle, holderFiles, cleanup);
      console.log(
        `opened ${int(held.opened)} idle keep-alive connections in ${((performance.now() - t0) / 1000).toFixed(1)} s${held.failed ? `, ${held.failed} failed (${held.firstError})` : ''}; the edge counts ${int((await edge.activeConnections()) ?? NaN)} active`,
      );
      const during = await client(`${edge.title}, ${int(held.opened)} idle connections`);
      const still = await held.open();
      console.log(`after the run: ${int(still)} of them still open; the edge counts ${int((await edge.activeConnections()) ?? NaN)} active`);
      await held.stop();
      const after = await client(`${edge.title}, idle connections closed`);

      const reference = (before.p99 + after.p99) / 2;
      const ratio = during.p99 / reference;
      const rateShare = during.rps / ((before.rps + after.rps) / 2);
      console.log(
        `  p99 ${during.p99.toFixed(2)} ms with idle connections, ${before.p99.toFixed(2)} and ${after.p99.toFixed(2)} ms without; rate ${(rateShare * 100).toFixed(0)}% of without`,
      );
      const results: Result[] = [
        {
          title: `idle keep-alive connections held`,
          figure: `${int(still)}`,
          ratio: `of ${int(idle)} opened`,
          target: `${int(IDLE)}`,
          ok: still >= IDLE && held.failed === 0,
        },
        {
          title: `edge p99 with ${int(held.opened)} idle connections`,
          figure: `${during.p99.toFixed(2)} ms`,
          ratio: `${ratio.toFixed(2)}x without`,
          target: `<= ${MAX_P99_RATIO}x without`,
          ok: ratio <= MAX_P99_RATIO && during.failed === 0,
        },
        {
          title: `edge rate with ${int(held.opened)} idle connections`,
          figure: `${int(during.rps)} req/s`,
          ratio: `${(rateShare * 100).toFixed(0)}% of without`,
          target: '',
        },
      ];
      return results;
    } finally {
      await cleanup.run();
    }
  },
};
