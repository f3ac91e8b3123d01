// The environment of a deployment, as its log shows it: `${key}` references are resolved at build
// and at run time; unknown keys and cycles are warnings ("Environment: ...") in the deployment log,
// never a failed deployment; the injected system variables (SVL_APP_ID ...) are counted in
// "Build environment: N variables" / "Runtime environment: N variables".
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';
import { IMMEDIATE_ENV, appPath, createApp, deploy, type LogEntry } from './support.js';

/** SVL_COMPANY_ID, SVL_APP_ID, SVL_APP_NAME, six SVL_DEPLOYMENT_* and PORT. */
const SYSTEM_COUNT = 10;

type Var = { key: string; value: string; is_runtime?: boolean; is_buildtime?: boolean };

function summary(logs: LogEntry[]) {
  const count = (re: RegExp) => {
    const l = logs.find((x) => re.test(x.message));
    return l ? { n: Number(re.exec(l.message)![1]), phase: l.attributes.phase } : undefined;
  };
  return {
    build: count(/^Build environment: (\d+) variables$/),
    runtime: count(/^Runtime environment: (\d+) variables$/),
    warnings: logs.filter((l) => l.message.startsWith('Environment:')),
  };
}

for (const kind of DB_KINDS) {
  describe(`applications: deployment environment [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });

    /** A git application in a company of its own (no global variables) with these variables. */
    async function appWith(vars: Var[], opts: { token?: string; kind?: 'git' | 'image' } = {}) {
      const token = opts.token ?? (await s.newCompany()).token;
      const a = await createApp(s, { token, kind: opts.kind });
      for (const v of vars) expectStatus(await s.post(`${appPath(a.id)}/env-vars`, v, { token }), 201);
      return { app: a, token };
    }

    async function deployAndSummarize(appId: string, token: string) {
      const d = await deploy(s, appId, {}, token);
      const logs = expectStatus(await s.get(`/applications/${appId}/deployments/${d.id}/logs?limit=5000`, { token }), 200) as LogEntry[];
      return { d, logs, ...summary(logs) };
    }

    it('valid ${key} references resolve without warnings; build and runtime counts include the system variables', async () => {
      const { app, token } = await appWith([
        { key: 'DB_HOST', value: 'db.internal' },
        { key: 'DATABASE_URL', value: 'postgres://${DB_HOST}:5432/shop' },
        { key: 'BUILD_FLAG', value: 'on', is_runtime: false },
        { key: 'BUILD_LABEL', value: '${BUILD_FLAG}-${SVL_APP_NAME}', is_runtime: false },
        { key: 'WORKER_URL', value: 'http://${DB_HOST}/jobs?app=${SVL_APP_ID}', is_buildtime: false },
        { key: 'ESCAPED', value: 'literal $${NOT_A_REFERENCE}' },
      ]);
      const r = await deployAndSummarize(app.id, token);
      assert.deepEqual(
        r.warnings.map((w) => w.message),
        [],
        'no problems',
      );
      // build: DB_HOST, DATABASE_URL, BUILD_FLAG, BUILD_LABEL, ESCAPED; runtime: DB_HOST, DATABASE_URL, WORKER_URL, ESCAPED
      assert.deepEqual(r.build, { n: 5 + SYSTEM_COUNT, phase: 'build' });
      assert.deepEqual(r.runtime, { n: 4 + SYSTEM_COUNT, phase: 'rollout' });
    });

    it('without any variable the environment holds exactly the injected system variables', async () => {
      const { app, token } = await appWith([]);
      const r = await deployAndSummarize(app.id, token);
      assert.equal(r.build?.n, SYSTEM_COUNT);
      assert.equal(r.runtime?.n, SYSTEM_COUNT);
      assert.deepEqual(r.warnings, []);
    });

    it('an unknown ${key} is an "Environment:" warning at build and run time, and the deployment still succeeds', async () => {
      const { app, token } = await appWith([{ key: 'DATABASE_URL', value: 'postgres://${DB_HOST}/shop' }]);
      const r = await deployAndSummarize(app.id, token);
      assert.equal(r.d.status, 'success');
      const warnings = r.warnings.map((w) => ({ message: w.message, severity: w.severity, phase: w.attributes.phase }));
      const expected = 'Environment: DATABASE_URL references unknown variable ${DB_HOST}';
      assert.deepEqual(warnings, [
        { message: expected, severity: 'warning', phase: 'build' },
        { message: expected, severity: 'warning', phase: 'rollout' },
      ]);
      assert.equal(r.build?.n, 1 + SYSTEM_COUNT, 'the variable is still there (with its reference left in place)');
    });

    it('a reference cycle is an "Environment:" warning, not a crash; the deployment succeeds', async () => {
      const { app, token } = await appWith([
        { key: 'A', value: 'x${B}' },
        { key: 'B', value: 'y${A}' },
        { key: 'C', value: '${C}' },
        { key: 'OK', value: 'fine' },
      ]);
      const r = await deployAndSummarize(app.id, token);
      assert.equal(r.d.status, 'success');
      const build = r.warnings.filter((w) => w.attributes.phase === 'build').map((w) => w.message);
      assert.equal(build.length, 2, build.join('\n'));
      assert.ok(
        build.some((m) => /^Environment: cycle: (A -> B -> A|B -> A -> B)$/.test(m)),
        build.join('\n'),
      );
      assert.ok(
        build.some((m) => /^Environment: cycle: C -> C$/.test(m)),
        build.join('\n'),
      );
      assert.equal(r.warnings.filter((w) => w.attributes.phase === 'rollout').length, 2, 'reported at run time as well');
      assert.equal(r.build?.n, 4 + SYSTEM_COUNT);
    });

    it('global variables take part: an app variable may reference one, and they are counted', async () => {
      const { token } = await s.newCompany();
      expectStatus(await s.post('/applications/global-env-vars', { key: 'REGION_DOMAIN', value: 'eu.example.com' }, { token }), 201);
      expectStatus(await s.post('/applications/global-env-vars', { key: 'ONLY_AT_RUNTIME', value: 'r', is_buildtime: false }, { token }), 201);
      const { app } = await appWith([{ key: 'PUBLIC_URL', value: 'https://shop.${REGION_DOMAIN}' }], { token });
      const r = await deployAndSummarize(app.id, token);
      assert.deepEqual(r.warnings, []);
      assert.equal(r.build?.n, 2 + SYSTEM_COUNT);
      assert.equal(r.runtime?.n, 3 + SYSTEM_COUNT);
    });

    it('a user variable named like a system variable is replaced by the system value, with a warning', async () => {
      const { app, token } = await appWith([{ key: 'SVL_APP_ID', value: 'spoofed' }]);
      const r = await deployAndSummarize(app.id, token);
      assert.ok(
        r.warnings.some((w) => /^Environment: SVL_APP_ID is set by the platform/.test(w.message)),
        r.warnings.map((w) => w.message).join('\n'),
      );
      assert.equal(r.build?.n, SYSTEM_COUNT, 'one SVL_APP_ID, not two');
    });

    it('fixing the variables removes the warnings from the next deployment', async () => {
      const { app, token } = await appWith([{ key: 'URL', value: '${MISSING_HOST}/x' }]);
      const first = await deployAndSummarize(app.id, token);
      assert.equal(first.warnings.length, 2);
      expectStatus(await s.post(`${appPath(app.id)}/env-vars`, { key: 'MISSING_HOST', value: 'h' }, { token }), 201);
      const second = await deployAndSummarize(app.id, token);
      assert.deepEqual(second.warnings, []);
      assert.equal(second.build?.n, 2 + SYSTEM_COUNT);
    });

    it('an image deployment has no build step: only the runtime environment is resolved and logged', async () => {
      const { app, token } = await appWith([{ key: 'X', value: '${Y}' }], { kind: 'image' });
      const r = await deployAndSummarize(app.id, token);
      assert.equal(r.build, undefined);
      assert.equal(r.runtime?.n, 1 + SYSTEM_COUNT);
      assert.deepEqual(
        r.warnings.map((w) => w.message),
        ['Environment: X references unknown variable ${Y}'],
      );
    });
  });
}
