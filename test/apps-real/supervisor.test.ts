// The local runtime's supervisor records a process in its registry of pids before the process runs
// anything, so a Slipway killed right after a spawn never leaves an unrecorded process behind.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { followFile, GATE, Supervisor } from '../../src/modules/applications/runtime/local/supervisor.js';

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

describe('local runtime supervisor: instance output files', () => {
  it('gives what was read back to the file system, keeping offsets, and loses no line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-output-'));
    const path = join(dir, 'app.out');
    // The instance's side: a descriptor it writes through (not O_APPEND), as spawn() hands it one.
    const fd = openSync(path, 'w');
    const seen: string[] = [];
    const follow = followFile(path, 0, (l) => seen.push(l), 256 * 1024);
    const payload = 'x'.repeat(1000);
    const total = 3000;
    for (let n = 0; n < total; n++) {
      writeSync(fd, `${n} ${payload}\n`);
      if (n % 200 === 199) await new Promise((r) => setTimeout(r, 300));
    }
    await waitFor(() => seen.length === total);
    await new Promise((r) => setTimeout(r, 300));
    follow.stop();
    closeSync(fd);
    assert.deepEqual(
      seen.map((l) => Number(l.split(' ')[0])),
      Array.from({ length: total }, (_, i) => i),
    );
    const st = statSync(path);
    assert.ok(st.size > 2_900_000, `the file keeps its size (${st.size})`);
    // About freeBytes plus what came after the last punch stays allocated, not the whole 3 MB.
    assert.ok(st.blocks * 512 < 1_000_000, `${st.blocks * 512} bytes allocated of ${st.size}`);
  });
});

async function waitFor(ok: () => boolean, ms = 20_000) {
  const until = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}
