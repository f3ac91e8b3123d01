// The process terminal of the local runtime: a real interactive shell (`/bin/sh -i`, or bash when
// asked for and installed) in the release directory with the process's environment. No pty: the
// shell talks through pipes (no line editing or job control, which a terminal over a WebSocket of
// text messages does not carry anyway); stdout and stderr (where the shell writes its prompt) both
// go to the client. The shell is its own process group, killed whole when the session ends.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { ShellIO, ShellSession, ShellSpec } from '../../../../shared/runtime/shell.js';

export function openLocalShell(spec: ShellSpec, cwd: string, env: Record<string, string>, io: ShellIO): ShellSession {
  const bin = spec.shell === 'bash' && existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
  const child = spawn(bin, bin.endsWith('bash') ? ['--noediting', '--norc', '-i'] : ['-i'], {
    cwd,
    env: { ...env, PS1: `${spec.hostname}$ `, TERM: 'dumb', HOSTNAME: spec.hostname },
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let closed = false;
  const kill = () => {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  };
  child.stdout!.on('data', (c: Buffer) => io.output(c.toString()));
  child.stderr!.on('data', (c: Buffer) => io.output(c.toString()));
  child.stdin!.on('error', () => {});
  child.on('error', (e) => {
    io.output(`${spec.shell}: ${e.message}\n`);
    io.exit(127);
  });
  child.on('close', (code, signal) => {
    kill();
    if (!closed) io.exit(code ?? (signal ? 128 + 9 : 0));
  });
  return {
    input(text: string) {
      if (!closed && child.stdin!.writable) child.stdin!.write(text.replace(/\r\n?/g, '\n'));
    },
    close() {
      closed = true;
      kill();
    },
  };
}
