// Property-based fuzzing over every operation of the served OpenAPI document (fast-check, a
// bounded budget per database): hostile path and query values, malformed, deep, non-finite and
// NUL-carrying bodies, bodies of the wrong shape. Every answer is below 500 and carries the
// contract's error body when it is an error; a rejected write changes no stored row.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Kysely } from 'kysely';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { DEFAULT_CLUSTER, IMMEDIATE_ENV, dbBody, waitStatus } from '../databases/support.js';
import { ALL_TABLES } from '../../src/shared/db/index.js';
import { resetTables } from '../../src/modules/index.js';

const RUNS = Number(process.env.SLIPWAY_FUZZ_RUNS ?? 150);
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
/** Tables a rejected request may touch: rate-limit counters, idempotency records, key use times. */
const BOOKKEEPING = new Set(['rate_windows', 'idempotency_keys', 'api_keys']);

interface Op {
  method: string;
  path: string;
  params: string[];
  query: string[];
  body: boolean;
}

const HOSTILE = [
  '%00',
  'a%00b',
  'x'.repeat(300),
  '%E0%A4%A',
  '%',
  '..%2F..',
  '\u00e9\u4e2d',
  ' ',
  'null',
  '1e400',
  '-1',
  '0',
  "'; drop table x;--",
  '%F0%9F%92%A9',
];

/** A body the schema must refuse (or, where everything is optional, a harmless one). */
const badBody = fc.oneof(
  fc.constant('{"a":'),
  fc.constant('[1,2'),
  fc.constant('{"display_name": 1e400}'),
  fc.constant('{"x": 1e400}'),
  fc.constant(JSON.stringify({ display_name: 'nul\u0000byte', name: 'a\u0000', key: '\u0000' })),
  fc.constant('['.repeat(200) + ']'.repeat(200)),
  fc.constant('{"a":'.repeat(100) + '1' + '}'.repeat(100)),
  fc.constant('"just a string"'),
  fc.constant('12'),
  fc.constant('true'),
  fc.json().map((j) => (j === 'null' || j === '{}' ? '{"unexpected_property_xyz": 1}' : j)),
  fc
    .dictionary(fc.string(), fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null)))
    .map((d) => JSON.stringify({ ...d, unexpected_property_xyz: true })),
);

for (const kind of DB_KINDS) {
  describe(`fuzzing every operation [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: { ...GENEROUS, unauthenticated: 100_000 }, env: IMMEDIATE_ENV });
    let ops: Op[] = [];
    const ids: Record<string, string> = {};
    before(async () => {
      const doc = (await s.get('/v3/openapi.json')).body as {
        paths: Record<string, Record<string, { parameters?: { in: string; name: string }[]; requestBody?: unknown }>>;
      };
      for (const [path, item] of Object.entries(doc.paths))
        for (const m of METHODS) {
          const o = item[m];
          if (!o) continue;
          const ps = o.parameters ?? [];
          ops.push({
            method: m.toUpperCase(),
            path,
            params: ps.filter((p) => p.in === 'path').map((p) => p.name),
            query: ps.filter((p) => p.in === 'query').map((p) => p.name),
            body: !!o.requestBody,
          });
        }
      ops = ops.filter((o) => !o.path.endsWith('/terminal'));
      // Real resources, so that hostile bodies reach validation behind a valid path.
      const app = await s.post('/applications', { display_name: 'fuzz app', cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1' });
      const db = await s.post('/databases', dbBody());
      await waitStatus(s, db.body.id, 'ready');
      const project = await s.post('/projects', { display_name: 'fuzz project' });
      ids['/applications'] = app.body.id;
      ids['/databases'] = db.body.id;
      ids['/projects'] = project.body.id;
      await s.app.jobs.idle();
    });

    const tables = () => [...new Set([...resetTables(), ...ALL_TABLES])].filter((t) => !BOOKKEEPING.has(t));
    async function snapshot(): Promise<Record<string, number>> {
      await s.app.jobs.idle();
      const out: Record<string, number> = {};
      const db = s.app.database.db as unknown as Kysely<Record<string, { id: string }>>;
      for (const t of tables()) {
        const r = await db
          .selectFrom(t)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirst();
        out[t] = Number((r as { n: unknown } | undefined)?.n ?? 0);
      }
      return out;
    }

    function fill(op: Op, hostileParam: string | null, value: string): string {
      const base = '/' + op.path.split('/')[1];
      return op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
        if (name === hostileParam) return value;
        if (name === 'id' && ids[base]) return ids[base]!;
        return '0d3c2b1a-9e8f-4a7b-8c6d-5e4f3a2b1c0d';
      });
    }

    it(`${RUNS} hostile requests: never a 5xx, always the error body, no state change on rejection`, async () => {
      const reqArb = fc.record({
        op: fc.integer({ min: 0, max: ops.length - 1 }),
        target: fc.constantFrom('param', 'query', 'body'),
        value: fc.oneof(fc.constantFrom(...HOSTILE), fc.string({ maxLength: 40 }).map(encodeURIComponent)),
        body: badBody,
      });
      await fc.assert(
        fc.asyncProperty(reqArb, async (g) => {
          const op = ops[g.op]!;
          let path = fill(op, null, '');
          let raw: string | undefined;
          if (g.target === 'param' && op.params.length) path = fill(op, op.params[g.value.length % op.params.length]!, g.value);
          else if (g.target === 'query' && op.query.length) path += `?${op.query[g.value.length % op.query.length]}=${g.value}`;
          else if (op.body) raw = g.body;
          else if (op.params.length) path = fill(op, op.params[0]!, g.value);
          else path += `?unexpected=${g.value}`;
          const write = op.method !== 'GET';
          const before = write ? await snapshot() : undefined;
          const url = `${s.baseUrl}/v3${path}`;
          const res = await fetch(url, {
            method: op.method,
            headers: { authorization: `Bearer ${s.token}`, ...(raw !== undefined ? { 'content-type': 'application/json' } : {}) },
            body: raw,
          });
          const text = await res.text();
          assert.ok(res.status < 500, `${op.method} ${path} ${raw?.slice(0, 80) ?? ''} -> ${res.status}: ${text.slice(0, 300)}`);
          if (res.status >= 400) {
            const body = JSON.parse(text) as Record<string, unknown>;
            assert.equal(body.status, res.status, `${op.method} ${path}: error body status`);
            assert.equal(typeof body.message, 'string');
            for (const k of Object.keys(body)) assert.ok(['message', 'status', 'data'].includes(k), `unexpected "${k}" in ${text}`);
            if (before) assert.deepEqual(await snapshot(), before, `${op.method} ${path} was rejected (${res.status}) but changed stored rows`);
          }
        }),
        { numRuns: RUNS, seed: Number(process.env.SLIPWAY_FUZZ_SEED ?? Date.now() % 100000), endOnFailure: true },
      );
    });
  });
}
