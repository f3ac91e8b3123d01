// Cron processes that really fire: schedules armed by deployments, concurrency policies (Forbid,
// Replace), the maximum run time, fault rules, manual triggers, suspension and activation, time
// zones, and the exit codes and runtime log lines every run leaves behind.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, waitFor } from '../helpers/util.js';
import { activeJobs, createApp, createProcess, cron, deploy, exitCodes, processPath, processesPath, runtimeLogs, type LogEntry } from './support.js';

const EVERY_SECOND = '*/1 * * * * *';
const YEARLY = '0 0 1 1 *';

for (const kind of DB_KINDS) {
  describe(`cron processes [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: { SLIPWAY_SIM_PROGRESSION: 'deployment=immediate,cron=duration:300' } });
    afterEach(async () => {
      await s.app.simulation.clearProgression('cron');
    });

    const runFor = (ms: number) => s.app.simulation.setProgression('cron', { mode: 'duration', ms });
    const trigger = (app: string, pid: string) => s.post(`${processPath(app, pid)}/trigger`);
    const logsOf = (app: string, pid: string) => runtimeLogs(s, app, pid);
    const has = (lines: LogEntry[], text: string | RegExp) => lines.some((l) => (typeof text === 'string' ? l.message.includes(text) : text.test(l.message)));
    const waitExit = (app: string, pid: string, value: string, description: string) =>
      waitFor(`exit code ${value} (${description})`, async () =>
        (await exitCodes(s, app, pid)).find((e) => e.value === value && e.description === description),
      );
    /** Deletes the process (stopping its schedule) and waits until none of its jobs is left. */
    const stop = async (app: string, pid: string) => {
      expectStatus(await s.delete(processPath(app, pid)), 200);
      await waitFor('no jobs of the deleted process', async () => (await activeJobs(s, pid)).length === 0);
    };

    /** A deployed application with a cron process that a second deployment rolled out. */
    async function deployedCron(body: Record<string, unknown>) {
      const app = await createApp(s);
      const c = await createProcess(s, app, cron('cron', body));
      await deploy(s, app);
      return { app, pid: c.id as string };
    }

    it('a new cron process takes effect with the next deployment, then fires on its schedule', async () => {
      const app = await createApp(s);
      await deploy(s, app);
      const c = await createProcess(s, app, cron('ticker', { schedule: EVERY_SECOND }));
      assert.deepEqual(await activeJobs(s, c.id), [], 'not armed before a deployment rolls it out');
      const early = await trigger(app, c.id);
      expectError(early, 400, /deploy/);
      assert.ok(Array.isArray(early.body.data?.issues));

      await deploy(s, app);
      assert.ok((await activeJobs(s, c.id)).some((j) => j.kind === 'cron.tick'));
      const done = await waitExit(app, c.id, '0', 'completed');
      assert.ok(!Number.isNaN(Date.parse(done.time)));

      const all = await runtimeLogs(s, app);
      assert.ok(has(all, 'Started process web (1 instance)'));
      const lines = await waitFor('start and end lines', async () => {
        const l = await logsOf(app, c.id);
        return has(l, /started \(schedule/) && has(l, 'exited with code 0 (completed)') && l;
      });
      assert.ok(has(lines, /Scheduled cron process ticker: "\*\/1 \* \* \* \* \*" \(UTC, concurrency Forbid\)/));
      const end = lines.find((l) => l.message.includes('exited with code 0'))!;
      assert.equal(end.attributes.exit_code, 0);
      assert.equal(end.attributes.termination_reason, 'completed');
      assert.equal(end.tags.process_id, c.id);
      await stop(app, c.id);
    });

    it('Forbid skips a fire while the previous run is still running', async () => {
      await runFor(2500);
      const { app, pid } = await deployedCron({ schedule: EVERY_SECOND, concurrency_policy: 'Forbid' });
      const skip = await waitFor('a skipped fire', async () => (await logsOf(app, pid)).find((l) => l.message.includes('skipped: previous run still running')));
      assert.equal(skip.severity, 'warning');
      await waitExit(app, pid, '0', 'completed');
      await stop(app, pid);
      expectError(await s.get(`${processPath(app, pid)}/metrics/exit-codes?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z`), 404);
    });

    it('Forbid never overlaps runs and never terminates one', async () => {
      await runFor(1500);
      const { app, pid } = await deployedCron({ schedule: EVERY_SECOND });
      await waitFor('two completed runs', async () => (await exitCodes(s, app, pid)).length >= 2);
      const codes = await exitCodes(s, app, pid);
      assert.ok(
        codes.every((e) => e.value === '0' && e.description === 'completed'),
        JSON.stringify(codes),
      );
      const rows = await s.app.database.db
        .selectFrom('process_runs')
        .selectAll()
        .where('process_id', '=', pid)
        .where('status', '!=', 'skipped')
        .orderBy('started_at')
        .execute();
      for (let i = 1; i < rows.length; i++)
        if (rows[i - 1]!.ended_at) assert.ok(rows[i]!.started_at >= rows[i - 1]!.ended_at!, 'a run starts only after the previous one ended');
      await stop(app, pid);
    });

    it('Replace terminates the running run (exit 143, replaced) and starts a fresh one', async () => {
      await runFor(2500);
      const { app, pid } = await deployedCron({ schedule: EVERY_SECOND, concurrency_policy: 'Replace' });
      const replaced = await waitExit(app, pid, '143', 'replaced');
      assert.ok(replaced.time);
      const lines = await logsOf(app, pid);
      const term = lines.find((l) => l.message.includes('replaced by a new run'))!;
      assert.ok(term, 'the termination is logged');
      assert.equal(term.attributes.exit_code, 143);
      assert.equal(term.attributes.termination_reason, 'replaced');
      assert.ok(!has(lines, 'skipped'), 'Replace never skips');
      await stop(app, pid);
    });

    it('a run longer than max_run_time_seconds is terminated at the limit (exit 137); 0 means no limit', async () => {
      await runFor(5000);
      const { app, pid } = await deployedCron({ schedule: YEARLY, max_run_time_seconds: 1 });
      assert.deepEqual(expectStatus(await trigger(app, pid), 200), { message: 'Cron job triggered' });
      await waitExit(app, pid, '137', 'deadlineExceeded');
      const lines = await logsOf(app, pid);
      assert.ok(has(lines, 'exceeded the maximum run time of 1 s'));
      assert.ok(has(lines, 'exit'));

      await runFor(300);
      expectStatus(await s.patch(processPath(app, pid), { max_run_time_seconds: 0 }), 200);
      expectStatus(await trigger(app, pid), 200);
      await waitExit(app, pid, '0', 'completed');
      await stop(app, pid);
    });

    it('a fault rule of operation cron makes a run exit 1 (failed)', async () => {
      const { app, pid } = await deployedCron({ schedule: YEARLY });
      await s.app.simulation.addFault({ operation: 'cron', target_id: pid, remaining: 1, message: 'Simulated crash of the nightly job' });
      expectStatus(await trigger(app, pid), 200);
      await waitExit(app, pid, '1', 'failed');
      const line = (await logsOf(app, pid)).find((l) => l.message.includes('exited with code 1 (failed)'))!;
      assert.ok(line.message.includes('Simulated crash of the nightly job'));
      assert.equal(line.severity, 'error');
      expectStatus(await trigger(app, pid), 200);
      await waitExit(app, pid, '0', 'completed');
      await stop(app, pid);
    });

    it('with the immediate progression a run ends as soon as it starts', async () => {
      await s.app.simulation.setProgression('cron', { mode: 'immediate' });
      const { app, pid } = await deployedCron({ schedule: YEARLY });
      expectStatus(await trigger(app, pid), 200);
      await waitExit(app, pid, '0', 'completed');
      const lines = await logsOf(app, pid);
      assert.ok(has(lines, /started \(manual\)/));
      await stop(app, pid);
    });

    it('manual triggers follow the concurrency policy too', async () => {
      await runFor(3000);
      const { app, pid } = await deployedCron({ schedule: YEARLY });
      expectStatus(await trigger(app, pid), 200);
      await waitFor('the first run started', async () => has(await logsOf(app, pid), /started \(manual\)/));
      expectStatus(await trigger(app, pid), 200);
      await waitFor('the second trigger skipped', async () => has(await logsOf(app, pid), 'skipped: previous run still running'));
      await waitExit(app, pid, '0', 'completed');
      assert.equal((await exitCodes(s, app, pid)).length, 1, 'only one run ran');
      await stop(app, pid);
    });

    it('only cron processes of a running application can be triggered', async () => {
      const app = await createApp(s);
      const [web] = expectStatus(await s.get(processesPath(app)), 200).data;
      const worker = await createProcess(s, app, { display_name: 'worker', type: 'worker' });
      const c = await createProcess(s, app, cron('c', { schedule: YEARLY }));
      for (const id of [web.id, worker.id]) {
        const r = await trigger(app, id);
        expectError(r, 400, /Only cron processes/);
        assert.ok(Array.isArray(r.body.data?.issues) && r.body.data.issues.length === 1);
      }
      expectError(await trigger(app, c.id), 400, /no successful deployment/);
      expectError(await trigger(app, '0d3c2b1a-9e8f-4a7b-8c6d-5e4f3a2b1c0d'), 404);
      assert.deepEqual(await exitCodes(s, app, c.id), []);
    });

    it('suspending the application cancels running runs and stops the schedule; activation re-arms it', async () => {
      await runFor(10_000);
      const { app, pid } = await deployedCron({ schedule: EVERY_SECOND });
      await waitFor('a run started', async () => has(await logsOf(app, pid), /started \(schedule/));
      expectStatus(await s.post(`/applications/${app}/suspend`), 200);
      await waitExit(app, pid, '143', 'cancelled');
      assert.ok(has(await logsOf(app, pid), 'the application was suspended'));
      await waitFor('no queued or running cron work', async () => (await activeJobs(s, pid)).length === 0);
      expectError(await trigger(app, pid), 400, /suspended/);

      expectStatus(await s.post(`/applications/${app}/activate`), 200);
      assert.ok(
        (await activeJobs(s, pid)).some((j) => j.kind === 'cron.tick' && j.status === 'queued'),
        'activation re-arms the schedule',
      );
      await stop(app, pid);
    });

    it('arms the next tick at the local time of the process time zone; a time zone change re-arms it', async () => {
      const { app, pid } = await deployedCron({ schedule: '0 9 * * *', time_zone: 'America/New_York' });
      const localTime = (iso: string, tz: string) =>
        new Intl.DateTimeFormat('en-GB', { timeZone: tz, hour: '2-digit', minute: '2-digit', hour12: false }).format(new Date(iso));
      const ticks = (await activeJobs(s, pid)).filter((j) => j.kind === 'cron.tick');
      assert.equal(ticks.length, 1);
      assert.equal(localTime(ticks[0]!.run_at, 'America/New_York'), '09:00');
      assert.ok(Date.parse(ticks[0]!.run_at) > Date.now());

      expectStatus(await s.patch(processPath(app, pid), { time_zone: 'Asia/Tokyo' }), 200);
      const after = (await activeJobs(s, pid)).filter((j) => j.kind === 'cron.tick');
      assert.equal(after.length, 1, 'the old chain was replaced, not doubled');
      assert.equal(localTime(after[0]!.run_at, 'Asia/Tokyo'), '09:00');
      assert.ok(has(await logsOf(app, pid), 'rescheduled'));
      await stop(app, pid);
    });

    it('job processes run after a successful deployment and record their exit code', async () => {
      const app = await createApp(s);
      const j = await createProcess(s, app, { display_name: 'migrate', type: 'job', entrypoint: 'npm run migrate' });
      await deploy(s, app);
      await waitExit(app, j.id, '0', 'completed');
      assert.ok(has(await logsOf(app, j.id), /started \(deployment\)/));
    });

    it('beforeDeployment jobs start with the deployment; afterFailedDeployment jobs only after a failed one', async () => {
      const app = await createApp(s);
      const before = await createProcess(s, app, { display_name: 'prepare', type: 'job', entrypoint: 'npm run prepare', job_start_policy: 'beforeDeployment' });
      const failed = await createProcess(s, app, {
        display_name: 'alert',
        type: 'job',
        entrypoint: 'npm run alert',
        job_start_policy: 'afterFailedDeployment',
      });
      await deploy(s, app);
      await waitExit(app, before.id, '0', 'completed');
      assert.ok(has(await logsOf(app, before.id), 'as the deployment starts'));
      await s.app.jobs.idle();
      assert.deepEqual(await exitCodes(s, app, failed.id), [], 'a successful deployment does not start it');

      const rule = expectStatus(await s.admin('POST', '/simulation/faults', { operation: 'deployment', target_id: app, remaining: 1 }), 201);
      const d = expectStatus(await s.post(`/applications/${app}/deployments`, {}), 200);
      await waitFor('failed deployment', async () => (await s.get(`/applications/${app}/deployments/${d.id}`)).body.status === 'failed');
      await waitExit(app, failed.id, '0', 'completed');
      assert.ok(has(await logsOf(app, failed.id), 'after the failed deployment'));
      assert.equal((await s.admin('DELETE', `/simulation/faults/${rule.id}`)).status, 404, 'a one-shot rule is gone once used');
    });
  });
}
