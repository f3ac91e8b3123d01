// Every create operation that takes a name, sent 20 times at once with the same name: none answers
// 5xx, and each follows its rule exactly: names derived from a display name are all different,
// a name that must be unique (a variable's key, a hostname) and a "one at a time" rule let exactly
// one request win, a limit lets exactly that many in, and the rest succeed side by side. On
// PostgreSQL the requests run concurrently (a look-up then an insert lets several through, or
// meets the unique index as a 500); SQLite runs one write transaction at a time and is checked too.
// Which operations take a name is read from the served OpenAPI document, so a new one fails this
// suite until it has a case here.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PROCESS_RESOURCE_TYPES } from '../../src/modules/resources/catalog.js';
import { DB_KINDS, GENEROUS, skipUnless, type Response, type TestServer, useServer } from '../helpers/server.js';
import { expectStatus, uniqueName } from '../helpers/util.js';
import { roleIds } from '../accounts/support.js';
import { DEFAULT_CLUSTER, addTarget, clearProgression, dbBody, setProgression, waitStatus } from '../databases/support.js';

const N = 20;
const ENV = { SLIPWAY_SIM_PROGRESSION: '*=immediate', SLIPWAY_JOB_POLL_MS: '20' };

/** A request body property that names what it creates (or a key of it). */
const NAMING = /(^|_)name$|^key$/;
/** POSTs whose body names something they do not create (a presigned URL names an object's key). */
const CREATE_NOTHING = new Set(['POST /object-storage/{id}/presign']);

/**
 * What 20 identical creates must give: `distinct`, all succeed under different `name`s; `one`,
 * exactly one succeeds and the others are 400; `all`, all succeed; a number, exactly that many
 * succeed and the others are 400.
 */
type Rule = 'distinct' | 'one' | 'all' | number;

interface Case {
  rule: Rule;
  /** The property of the created resource that holds its name (`name` unless said). */
  nameOf?: string;
  /** Prepares what the operation needs and returns the request to send 20 times. */
  setup(s: TestServer): Promise<() => Promise<Response>>;
}

const appBody = (display_name = uniqueName('conc')) => ({
  display_name,
  cluster_id: DEFAULT_CLUSTER.id,
  source: 'publicGit',
  git_type: 'github',
  repo_url: 'https://github.com/acme/shop',
  default_branch: 'main',
});
const siteBody = (display_name = uniqueName('site')) => ({
  display_name,
  repo_url: 'https://github.com/acme/site',
  default_branch: 'main',
});
const created = async (r: Promise<Response>, status = 201) => expectStatus(await r, status) as { id: string; name: string; [k: string]: any };
const app = (s: TestServer) => created(s.post('/applications', appBody()));
const site = (s: TestServer) => created(s.post('/static-sites', siteBody()));
const lb = (s: TestServer) => created(s.post('/load-balancers', { display_name: uniqueName('lb') }));
async function db(s: TestServer) {
  const d = await created(s.post('/databases', dbBody()));
  await waitStatus(s, d.id, 'ready');
  return d;
}
const host = (what: string) => `${what}-${Math.random().toString(36).slice(2, 8)}.concurrent.example.com`;

/** The cases, by operation (`METHOD /path` as the served document writes it). */
const CASES: Record<string, Case> = {
  'POST /api-keys': {
    rule: 'all',
    async setup(s) {
      const roles = await roleIds(s);
      return () => s.post('/api-keys', { name: 'same key', role_ids: [roles['Company Developer']] });
    },
  },
  'POST /projects': { rule: 'distinct', setup: async (s) => () => s.post('/projects', { display_name: 'Same Project' }) },
  'POST /applications': { rule: 'distinct', setup: async (s) => () => s.post('/applications', appBody('Same App')) },
  'POST /applications/{id}/clone': {
    rule: 'distinct',
    async setup(s) {
      const a = await app(s);
      return () => s.post(`/applications/${a.id}/clone`, { display_name: 'Same Clone' });
    },
  },
  'POST /applications/{id}/processes': {
    rule: 'distinct',
    nameOf: 'key',
    async setup(s) {
      const a = await app(s);
      const body = {
        display_name: 'Same Worker',
        type: 'worker',
        resource_type_id: PROCESS_RESOURCE_TYPES[0]!.id,
        scaling_strategy: { type: 'manual', config: { instanceCount: 1 } },
      };
      return () => s.post(`/applications/${a.id}/processes`, body);
    },
  },
  'POST /applications/{id}/env-vars': {
    rule: 'one',
    async setup(s) {
      const a = await app(s);
      return () => s.post(`/applications/${a.id}/env-vars`, { key: 'SAME_KEY', value: 'v' });
    },
  },
  'POST /applications/{id}/volumes': {
    rule: 'one',
    async setup(s) {
      const a = await app(s);
      return () => s.post(`/applications/${a.id}/volumes`, { name: 'same-volume', mount_path: '/data', size_gb: 1 });
    },
  },
  'POST /applications/global-env-vars': { rule: 'one', setup: async (s) => () => s.post('/applications/global-env-vars', { key: 'SAME_GLOBAL', value: 'v' }) },
  'POST /applications/{id}/domains': {
    rule: 'one',
    async setup(s) {
      const a = await app(s);
      const domain_name = host('app');
      return () => s.post(`/applications/${a.id}/domains`, { domain_name });
    },
  },
  'POST /applications/{id}/preview-apps': {
    rule: 'distinct',
    async setup(s) {
      const p = await created(s.post('/pipelines', { display_name: 'preview pipeline', type: 'trunk' }));
      const src = await app(s);
      const dev = p.stages.find((x: { display_name: string }) => x.display_name === 'Dev');
      expectStatus(await s.post(`/pipelines/${p.id}/stages/${dev.id}/apps`, { app_id: src.id }), 200);
      expectStatus(await s.post(`/pipelines/${p.id}/preview/enable`, { repo_url: 'https://github.com/acme/shop' }), 200);
      return () => s.post(`/applications/${src.id}/preview-apps`, { branch: 'same-branch', display_name: 'Same Preview' });
    },
  },
  'POST /static-sites': { rule: 'distinct', setup: async (s) => () => s.post('/static-sites', siteBody('Same Site')) },
  'POST /static-sites/{id}/env-vars': {
    rule: 'one',
    async setup(s) {
      const st = await site(s);
      return () => s.post(`/static-sites/${st.id}/env-vars`, { key: 'SAME_KEY', value: 'v' });
    },
  },
  'POST /static-sites/{id}/domains': {
    rule: 'one',
    async setup(s) {
      const st = await site(s);
      const domain_name = host('site');
      return () => s.post(`/static-sites/${st.id}/domains`, { domain_name });
    },
  },
  'POST /databases': { rule: 'distinct', setup: async (s) => () => s.post('/databases', dbBody({ display_name: 'Same Database' })) },
  'POST /databases/{id}/backups': {
    rule: 'one',
    async setup(s) {
      const d = await db(s);
      // The first backup runs while the others arrive: one at a time.
      await setProgression(s, 'backup', { mode: 'duration', ms: 60_000 });
      return () => s.post(`/databases/${d.id}/backups`, { display_name: 'Same Backup' });
    },
  },
  'POST /databases/{id}/external-backups': {
    rule: 'one',
    async setup(s) {
      const d = await db(s);
      const target = await addTarget(s, d.id, 'same-target');
      await setProgression(s, 'backup', { mode: 'duration', ms: 60_000 });
      return () => s.post(`/databases/${d.id}/external-backups`, { name: 'same-dump', backup_target_id: target });
    },
  },
  'POST /databases/{id}/backup-targets': {
    rule: 5,
    async setup(s) {
      const d = await db(s);
      return () => s.post(`/databases/${d.id}/backup-targets`, { bucket_name: 'same-bucket', access_key: 'AKIA1', secret_key: 'secret1' });
    },
  },
  'POST /docker-registries': {
    rule: 'all',
    setup: async (s) => () => s.post('/docker-registries', { name: 'Same Registry', username: 'user', secret: 'secret-token' }),
  },
  'POST /pipelines': { rule: 'all', setup: async (s) => () => s.post('/pipelines', { display_name: 'Same Pipeline', type: 'trunk' }) },
  'POST /pipelines/{id}/stages': {
    rule: 'all',
    async setup(s) {
      const p = await created(s.post('/pipelines', { display_name: 'stages pipeline', type: 'trunk' }));
      return () => s.post(`/pipelines/${p.id}/stages`, { display_name: 'Same Stage', insert_before: 1 });
    },
  },
  'POST /load-balancers': { rule: 'distinct', setup: async (s) => () => s.post('/load-balancers', { display_name: 'Same Balancer' }) },
  'POST /load-balancers/{id}/domains': {
    rule: 'one',
    async setup(s) {
      const l = await lb(s);
      const domain_name = host('lb');
      return () => s.post(`/load-balancers/${l.id}/domains`, { domain_name });
    },
  },
  'POST /object-storage': { rule: 'distinct', setup: async (s) => () => s.post('/object-storage', { display_name: 'Same Bucket' }) },
};

/** Creates that take no name but hold a rule of their own. */
const OTHER_CASES: Record<string, Case> = {
  // A bucket has one CDN domain: one enable wins, the others find it enabled.
  'POST /object-storage/{id}/domain': {
    rule: 'one',
    async setup(s) {
      const b = await created(s.post('/object-storage', { display_name: 'cdn bucket' }));
      return () => s.post(`/object-storage/${b.id}/domain`);
    },
  },
  // At most 10 webhooks per company (the suite's company has none).
  'POST /webhooks': {
    rule: 10,
    setup: async (s) => () => s.post('/webhooks', { allowed_events: ['APP_CREATE'], endpoint: 'https://example.com/hook', description: 'same hook' }),
  },
};

const succeeded = (rs: Response[]) => rs.filter((r) => r.status >= 200 && r.status < 300);

function check(op: string, { rule, nameOf = 'name' }: Case, rs: Response[]) {
  const fivexx = rs.filter((r) => r.status >= 500);
  assert.equal(fivexx.length, 0, `${op}: ${fivexx.length} of ${N} answered 5xx, e.g. ${fivexx[0]?.status} ${fivexx[0]?.text}`);
  const ok = succeeded(rs);
  const refused = rs.filter((r) => r.status === 400);
  if (rule === 'distinct' || rule === 'all') {
    assert.equal(ok.length, N, `${op}: every create succeeds (statuses ${rs.map((r) => r.status).join(',')}): ${rs.find((r) => r.status >= 300)?.text}`);
    if (rule === 'distinct') assert.equal(new Set(ok.map((r) => r.body[nameOf])).size, N, `${op}: every name is different`);
  } else {
    const n = rule === 'one' ? 1 : rule;
    assert.equal(ok.length, n, `${op}: exactly ${n} of ${N} succeed (statuses ${rs.map((r) => r.status).join(',')})`);
    assert.equal(refused.length, N - n, `${op}: the others are 400: ${rs.find((r) => r.status >= 300 && r.status !== 400)?.text}`);
  }
}

for (const kind of DB_KINDS) {
  describe(`creates with one name, ${N} at once [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: ENV, logger: { level: 'error', stream: process.stderr } });

    it('every create operation whose body names what it creates has a case here', async () => {
      const doc = expectStatus(await s.get('/v3/openapi.json'), 200);
      const resolve = (x: any): any => (x?.$ref ? doc.components.schemas[x.$ref.split('/').pop()] : x);
      const naming: string[] = [];
      for (const [path, item] of Object.entries<any>(doc.paths)) {
        const body = resolve(item.post?.requestBody?.content?.['application/json']?.schema);
        const variants = body?.anyOf ?? body?.oneOf ?? [body];
        if (variants.some((v: any) => Object.keys(resolve(v)?.properties ?? {}).some((k) => NAMING.test(k)))) naming.push(`POST ${path.replace(/^\/v3/, '')}`);
      }
      assert.deepEqual(naming.filter((op) => !CREATE_NOTHING.has(op)).sort(), Object.keys(CASES).sort());
    });

    for (const [op, c] of Object.entries({ ...CASES, ...OTHER_CASES }))
      it(`${op}: ${typeof c.rule === 'number' ? `exactly ${c.rule} succeed` : c.rule}, no 5xx`, async () => {
        const send = await c.setup(s);
        try {
          check(op, c, await Promise.all(Array.from({ length: N }, () => send())));
        } finally {
          await clearProgression(s, 'backup');
        }
      });
  });
}
