// The local runtime's supervisor records a process in its registry of pids before the process runs
// anything, so a Slipway killed right after a spawn never leaves an unrecorded process behind.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { GATE, Supervisor } from '../../src/modules/applications/runtime/local/supervisor.js';

const exitOf = (child: ReturnType<typeof spawn>) => new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));

describe('local runtime supervisor: the gate', () => {
  it('a command whose gate pipe closes without a line (its Slipway died before recording it) never runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-gate-'));
    const child = spawn('/bin/sh', ['-c', GATE, `touch ${dir}/ran`], { stdio: ['pipe', 'ignore', 'ignore'] });
    child.stdin.end();
    assert.equal(await exitOf(child), 125);
    assert.ok(!existsSync(join(dir, 'ran')), 'the command did not run');
  });

  it('once the line arrives, the command runs as the same process, with stdin from /dev/null', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-gate-'));
    const child = spawn('/bin/sh', ['-c', GATE, `echo $$ > ${dir}/pid; cat > ${dir}/stdin; exit 3`], { stdio: ['pipe', 'ignore', 'ignore'] });
    child.stdin.write('\n');
    child.stdin.write('not for the command\n');
    assert.equal(await exitOf(child), 3);
    assert.equal(Number(readFileSync(join(dir, 'pid'), 'utf8')), child.pid);
    assert.equal(readFileSync(join(dir, 'stdin'), 'utf8'), '');
  });

  it("a run's process finds its own pid in the registry when it starts", async () => {
    const root = mkdtempSync(join(tmpdir(), 'slipway-supervisor-'));
    const sup = new Supervisor(root, { line: () => {}, note: () => {} });
    const lines: string[] = [];
    const run = sup.runOnce({
      command: 'echo $$; cat instances.json',
      cwd: root,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      limitMs: 0,
      line: (l) => lines.push(l),
    });
    assert.deepEqual(await run.done, { code: 0, timedOut: false });
    const [pid, registry] = lines;
    assert.equal(Number(pid), run.child.pid);
    assert.deepEqual(
      (JSON.parse(registry!) as { pid: number }[]).map((e) => e.pid),
      [run.child.pid],
    );
    // Its exit removed it.
    assert.deepEqual(JSON.parse(readFileSync(join(root, 'instances.json'), 'utf8')), []);
  });
});
