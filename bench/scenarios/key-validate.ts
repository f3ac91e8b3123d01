// GET /v3/api-keys/validate against the bare route: the cost of authentication alone.
import { type Scenario } from '../lib/bench.js';
import { int, shareOfBare } from '../lib/report.js';

/** The key check every request starts with, at least as fast as a whole list read (list-read's targets). */
const target = { sqlite: 0.9, postgres: 0.5 };

export const keyValidate: Scenario = {
  name: 'key-validate',
  async run(b) {
    const r = await b.pairedShare('GET /v3/api-keys/validate', '/v3/api-keys/validate');
    return [shareOfBare('GET /v3/api-keys/validate', `${int(r.rps)} req/s`, r.share, target[b.storage])];
  },
};
