// GET /v3/projects, 1,000 projects stored (a page of 25), against the bare route serving that page.
import { type Scenario } from '../lib/bench.js';
import { int, shareOfBare } from '../lib/report.js';

/**
 * What the read path costs on top of the HTTP server itself (authentication, rate limit, the page
 * from the cache or the database, the request log line): on SQLite close to nothing; PostgreSQL
 * adds a round trip per read.
 */
const target = { sqlite: 0.9, postgres: 0.5 };

export const listRead: Scenario = {
  name: 'list-read',
  async run(b) {
    await b.projects();
    const r = await b.pairedShare('GET /v3/projects (1,000 stored, page of 25)', '/v3/projects');
    return [shareOfBare('GET /v3/projects, 1,000 stored', `${int(r.rps)} req/s`, r.share, target[b.storage])];
  },
};
