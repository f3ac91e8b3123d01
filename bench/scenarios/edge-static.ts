// A static file from a site through the edge (issue #47): a 4 KB HTML page, the edge's rendered
// `static` target (pretty URLs, as sites are published) against Debian's nginx with one worker
// serving the same directory with a plain configuration, 50 connections, in paired rounds.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Scenario } from '../lib/bench.js';
import { Cleanup, compareEdge, edgeHost, edgeSubject, referenceNginx } from '../lib/edge.js';
import { int, pct, type Result } from '../lib/report.js';

/** Within 80% of nginx serving the same file from disk. */
const MIN_SHARE = 0.8;

/** A plain HTML page of about 4 KB. */
const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Bench site</title><link rel="stylesheet" href="/style.css"></head>
<body>
<h1>Bench site</h1>
${Array.from({ length: 40 }, (_, i) => `<p>Paragraph ${i + 1} of a small static page, served from disk by the edge of the bench's site.</p>`).join('\n')}
</body>
</html>
`;

export const edgeStatic: Scenario = {
  name: 'edge-static',
  only: 'sqlite',
  async run() {
    const cleanup = new Cleanup();
    try {
      const root = cleanup.dir('slipway-bench-site-');
      writeFileSync(join(root, 'index.html'), PAGE);
      const nginx = await referenceNginx({ root }, cleanup);
      const edge = await edgeSubject(
        [edgeHost('site.bench.test', { type: 'static', root, compressedRoot: null, prettyUrls: true, notFoundPage: null, fallback: null })],
        cleanup,
      );
      const kb = (Buffer.byteLength(PAGE) / 1024).toFixed(1);
      const r = await compareEdge(
        { title: `nginx, ${kb} KB index.html, plain config`, url: nginx.url, headers: nginx.headers, cpu: nginx.cpu },
        { title: `${edge.title}, static target, rendered config`, url: edge.url, headers: edge.headers, cpu: edge.cpu },
      );
      console.log(`  the edge's access log: ${await edge.accessLog()}`);
      const results: Result[] = [
        { title: `nginx serving the same ${kb} KB file`, figure: `${int(r.reference.rps)} req/s`, ratio: `p99 ${r.reference.p99.toFixed(2)} ms`, target: '' },
        {
          title: `edge static file (${kb} KB HTML)`,
          figure: `${int(r.subject.rps)} req/s`,
          ratio: `${pct(r.share)} of nginx`,
          target: `>= ${pct(MIN_SHARE)} of nginx`,
          ok: r.share >= MIN_SHARE && r.failed === 0,
        },
        { title: `edge static file, p99`, figure: `${r.subject.p99.toFixed(2)} ms`, ratio: `${r.p99Ratio.toFixed(2)}x nginx`, target: '' },
      ];
      return results;
    } finally {
      await cleanup.run();
    }
  },
};
