// The functions the deployment code calls, against a real database: resolveEnvironment (precedence
// global < app < system, phase flags, references, problems), systemVariables, copyEnvVars and
// deleteAppEnvVars. Variables are created over HTTP; the functions are called directly.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, sleep, uniqueName } from '../helpers/util.js';
import { DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { copyEnvVars, deleteAppEnvVars, resolveEnvironment, systemVariables } from '../../src/modules/env-vars/service.js';
import type { ApplicationsTable } from '../../src/modules/applications/storage.js';
import { systemCall } from '../../src/shared/context.js';

const deployment = (over: Partial<Parameters<typeof systemVariables>[2]> = {}) => ({
  id: randomUUID(),
  initiated_by: 'dev@example.com',
  trigger: 'manual',
  commit_sha: '0123456789abcdef0123456789abcdef01234567',
  branch: 'main',
  docker_image_url: null,
  ...over,
});

const SYSTEM_SUFFIXES = [
  'COMPANY_ID',
  'APP_ID',
  'APP_NAME',
  'DEPLOYMENT_ID',
  'DEPLOYMENT_INITIATED_BY',
  'DEPLOYMENT_TRIGGER',
  'DEPLOYMENT_COMMIT_SHA',
  'DEPLOYMENT_BRANCH',
  'DEPLOYMENT_DOCKER_IMAGE',
];

for (const kind of DB_KINDS) {
  describe(`env vars: deployment environment [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS });

    const newApp = async (token?: string): Promise<ApplicationsTable> => {
      const r = await s.post(
        '/applications',
        { display_name: uniqueName('resolve app'), cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1.27' },
        { token },
      );
      expectStatus(r, 201);
      return s.app.database.db.selectFrom('applications').selectAll().where('id', '=', r.body.id).executeTakeFirstOrThrow();
    };
    const appVar = async (app: ApplicationsTable, key: string, value: string, flags: object = {}, token?: string) =>
      expectStatus(await s.post(`/applications/${app.id}/env-vars`, { key, value, ...flags }, { token }), 201);
    const globalVar = async (key: string, value: string, flags: object = {}, token?: string) =>
      expectStatus(await s.post('/applications/global-env-vars', { key, value, ...flags }, { token }), 201);
    const resolve = (app: ApplicationsTable, phase: 'build' | 'runtime', system = systemVariables('svl', app, deployment())) =>
      resolveEnvironment(systemCall(s.app, s.app.database.db, app.company_id), app, system, phase);

    it('systemVariables: SVL_ names by default, another prefix upper-cased, PORT=8080, missing facts empty', async () => {
      const app = await newApp();
      const d = deployment({ docker_image_url: 'nginx:1.27' });
      const sys = systemVariables('svl', app, d);
      assert.deepEqual(Object.keys(sys).sort(), [...SYSTEM_SUFFIXES.map((x) => `SVL_${x}`), 'PORT'].sort());
      assert.equal(sys.SVL_COMPANY_ID, s.companyId);
      assert.equal(sys.SVL_APP_ID, app.id);
      assert.equal(sys.SVL_APP_NAME, app.name);
      assert.equal(sys.SVL_DEPLOYMENT_ID, d.id);
      assert.equal(sys.SVL_DEPLOYMENT_INITIATED_BY, 'dev@example.com');
      assert.equal(sys.SVL_DEPLOYMENT_TRIGGER, 'manual');
      assert.equal(sys.SVL_DEPLOYMENT_COMMIT_SHA, d.commit_sha);
      assert.equal(sys.SVL_DEPLOYMENT_BRANCH, 'main');
      assert.equal(sys.SVL_DEPLOYMENT_DOCKER_IMAGE, 'nginx:1.27');
      assert.equal(sys.PORT, '8080');

      const other = systemVariables('acme', app, deployment({ initiated_by: null, commit_sha: null, branch: null, docker_image_url: null }));
      assert.deepEqual(Object.keys(other).sort(), [...SYSTEM_SUFFIXES.map((x) => `ACME_${x}`), 'PORT'].sort());
      assert.equal(other.ACME_DEPLOYMENT_INITIATED_BY, '');
      assert.equal(other.ACME_DEPLOYMENT_COMMIT_SHA, '');
      assert.equal(other.ACME_DEPLOYMENT_BRANCH, '');
      assert.equal(other.ACME_DEPLOYMENT_DOCKER_IMAGE, '');
    });

    it('merges global < app < system, filters by phase and resolves references', async () => {
      const { token } = await s.newCompany();
      const app = await newApp(token);
      await globalVar('G_ONLY', 'global-only', {}, token);
      await globalVar('SHARED', 'from-global', {}, token);
      await globalVar('BUILD_ONLY', 'b', { is_runtime: false }, token);
      await appVar(app, 'SHARED', 'from-app', {}, token);
      await appVar(app, 'RUNTIME_ONLY', 'r', { is_buildtime: false }, token);
      await appVar(app, 'URL', 'http://${SVL_APP_NAME}:${PORT}/${SHARED}?g=${G_ONLY}', {}, token);
      await appVar(app, 'ESCAPED', 'literal $${SHARED} and $5', {}, token);

      const sys = systemVariables('svl', app, deployment());
      const build = await resolve(app, 'build', sys);
      assert.deepEqual(build.problems, []);
      assert.equal(build.vars.G_ONLY, 'global-only');
      assert.equal(build.vars.SHARED, 'from-app');
      assert.equal(build.vars.BUILD_ONLY, 'b');
      assert.ok(!('RUNTIME_ONLY' in build.vars));
      assert.equal(build.vars.URL, `http://${app.name}:8080/from-app?g=global-only`);
      assert.equal(build.vars.ESCAPED, 'literal ${SHARED} and $5');
      for (const [k, v] of Object.entries(sys)) assert.equal(build.vars[k], v, k);

      const runtime = await resolve(app, 'runtime', sys);
      assert.deepEqual(runtime.problems, []);
      assert.equal(runtime.vars.RUNTIME_ONLY, 'r');
      assert.ok(!('BUILD_ONLY' in runtime.vars));
      assert.equal(runtime.vars.SHARED, 'from-app');
    });

    it('an app variable replaces the global one of the same key entirely, flags included', async () => {
      const { token } = await s.newCompany();
      const app = await newApp(token);
      await globalVar('FEATURE', 'global', {}, token);
      await appVar(app, 'FEATURE', 'app', { is_buildtime: false }, token);
      assert.ok(!('FEATURE' in (await resolve(app, 'build')).vars), 'the global does not reappear at build time');
      assert.equal((await resolve(app, 'runtime')).vars.FEATURE, 'app');
      // Another application of the company inherits the global.
      const other = await newApp(token);
      assert.equal((await resolve(other, 'build')).vars.FEATURE, 'global');
    });

    it('system variables win over user variables of the same name, with a problem saying so', async () => {
      const { token } = await s.newCompany();
      const app = await newApp(token);
      await appVar(app, 'PORT', '3000', {}, token);
      await globalVar('SVL_APP_ID', 'spoofed', {}, token);
      const r = await resolve(app, 'runtime');
      assert.equal(r.vars.PORT, '8080');
      assert.equal(r.vars.SVL_APP_ID, app.id);
      assert.equal(r.problems.length, 2);
      assert.ok(r.problems.some((p) => p.startsWith('PORT ')));
      assert.ok(r.problems.some((p) => p.startsWith('SVL_APP_ID ')));
    });

    it('unknown references and cycles become problems, never exceptions', async () => {
      const { token } = await s.newCompany();
      const app = await newApp(token);
      await appVar(app, 'DATABASE_URL', 'postgres://${DB_HOST}/db', {}, token);
      await appVar(app, 'A', '${B}', {}, token);
      await appVar(app, 'B', '${A}', {}, token);
      await appVar(app, 'RT', 'runtime value', { is_buildtime: false }, token);
      await appVar(app, 'NEEDS_RT', 'x${RT}', {}, token);
      const build = await resolve(app, 'build');
      assert.equal(build.vars.DATABASE_URL, 'postgres://${DB_HOST}/db');
      assert.equal(build.vars.NEEDS_RT, 'x${RT}', 'a variable of the other phase is unknown here');
      assert.deepEqual(build.problems.sort(), [
        'DATABASE_URL references unknown variable ${DB_HOST}',
        'NEEDS_RT references unknown variable ${RT}',
        'cycle: A -> B -> A',
      ]);
      const runtime = await resolve(app, 'runtime');
      assert.equal(runtime.vars.NEEDS_RT, 'xruntime value');
    });

    it('system values are taken literally (a branch name cannot pull in a secret)', async () => {
      const { token } = await s.newCompany();
      const app = await newApp(token);
      await appVar(app, 'SECRET', 'hunter2', {}, token);
      await appVar(app, 'WHERE', 'branch ${SVL_DEPLOYMENT_BRANCH}', {}, token);
      const r = await resolve(app, 'build', systemVariables('svl', app, deployment({ branch: 'feat/${SECRET}' })));
      assert.equal(r.vars.SVL_DEPLOYMENT_BRANCH, 'feat/${SECRET}');
      assert.equal(r.vars.WHERE, 'branch feat/${SECRET}');
      assert.deepEqual(r.problems, []);
    });

    it("another company's global variables do not apply", async () => {
      const a = await s.newCompany();
      const b = await s.newCompany();
      await globalVar('ONLY_FOR_A', '1', {}, a.token);
      const appB = await newApp(b.token);
      assert.ok(!('ONLY_FOR_A' in (await resolve(appB, 'runtime')).vars));
    });

    it('a value that cannot be decrypted is left out with a problem', async () => {
      const { token } = await s.newCompany();
      const app = await newApp(token);
      const v = await appVar(app, 'BROKEN', 'x', {}, token);
      await appVar(app, 'FINE', 'y', {}, token);
      await s.app.database.db.updateTable('env_vars').set({ value: 'v1:garbage:garbage:garbage' }).where('id', '=', v.id).execute();
      const r = await resolve(app, 'runtime');
      assert.ok(!('BROKEN' in r.vars));
      assert.equal(r.vars.FINE, 'y');
      assert.equal(r.problems.length, 1);
      assert.match(r.problems[0]!, /^BROKEN /);
    });

    it('copyEnvVars clones app variables (new ids, same order, keys, values and flags); deleteAppEnvVars removes them', async () => {
      const from = await newApp();
      const to = await newApp();
      const bystander = await newApp();
      await appVar(from, 'ONE', '1');
      await sleep(3);
      await appVar(from, 'TWO', '2', { is_runtime: false });
      await sleep(3);
      await appVar(from, 'THREE', '${ONE}', { is_buildtime: false });
      await appVar(bystander, 'UNRELATED', 'u');

      // Only within the given company: another company's id copies nothing.
      await s.app.database.db.transaction().execute((tx) => copyEnvVars(tx, from.id, to.id, randomUUID()));
      assert.equal(expectStatus(await s.get(`/applications/${to.id}/env-vars`), 200).total, 0);

      await s.app.database.db.transaction().execute((tx) => copyEnvVars(tx, from.id, to.id, s.companyId));
      const src = expectStatus(await s.get(`/applications/${from.id}/env-vars`), 200).data;
      const dst = expectStatus(await s.get(`/applications/${to.id}/env-vars`), 200).data;
      const shape = (x: { key: string; value: string; is_runtime: boolean; is_buildtime: boolean }) => [x.key, x.value, x.is_runtime, x.is_buildtime];
      assert.deepEqual(dst.map(shape), src.map(shape));
      assert.deepEqual(dst.map(shape), [
        ['ONE', '1', true, true],
        ['TWO', '2', false, true],
        ['THREE', '${ONE}', true, false],
      ]);
      for (const d of dst) {
        assert.equal(d.app_id, to.id);
        assert.ok(!src.some((x: { id: string }) => x.id === d.id), 'copies have new ids');
      }
      // The copies are independent of their sources.
      expectStatus(await s.put(`/applications/${to.id}/env-vars/${dst[0].id}`, { value: 'changed' }), 200);
      assert.equal(expectStatus(await s.get(`/applications/${from.id}/env-vars`), 200).data[0].value, '1');

      await s.app.database.db.transaction().execute((tx) => deleteAppEnvVars(tx, to.id));
      assert.equal(expectStatus(await s.get(`/applications/${to.id}/env-vars`), 200).total, 0);
      assert.equal(expectStatus(await s.get(`/applications/${from.id}/env-vars`), 200).total, 3);
      assert.equal(expectStatus(await s.get(`/applications/${bystander.id}/env-vars`), 200).total, 1);
    });
  });
}
