// The process terminal: GET /applications/{id}/processes/{process_id}/terminal upgraded to a
// WebSocket. Text messages from the client are the shell's stdin; the shell's output comes back as
// text messages. The runtime driver gives the shell (the simulated one is a small fake shell with
// the process's resolved runtime environment); the local runtime gives a real one in the release
// directory. Sessions close after `terminal.idleMs` without
// input and after `terminal.maxMs` in all. Close codes follow the contract: 4000 application or
// process not found, 4001 no running instance, 4003 the shell ended (exit, idle or maximum time),
// 4300 unexpected server error.
import { idDigits } from '../../shared/ids.js';
import type { RawData, WebSocket } from 'ws';
import type { CallContext } from '../../shared/context.js';
import { currentRelease, findApp } from '../applications/index.js';
import { resolveEnvironment, systemVariables } from '../env-vars/index.js';
import type { TERMINAL_SHELLS } from './schemas.js';
import { findProcess } from './service.js';

export type TerminalShell = (typeof TERMINAL_SHELLS)[number];

export const CLOSE = { notFound: 4000, notRunning: 4001, closed: 4003 } as const;

/** Before the upgrade: the application and the process exist (404 as plain HTTP otherwise). */
export async function checkTerminal(ctx: CallContext, appId: string, processId: string): Promise<void> {
  await findApp(ctx, appId);
  await findProcess(ctx.tx, appId, processId);
}

/** After the upgrade: connects the socket to a shell in a running instance of the process. */
export async function openTerminal(socket: WebSocket, ctx: CallContext, appId: string, processId: string, shell: TerminalShell = 'sh'): Promise<void> {
  const { app, tx } = ctx;
  // Input sent before the shell is ready is kept and fed to it once it starts.
  const early: string[] = [];
  const keep = (data: RawData) => early.push(text(data));
  socket.on('message', keep);
  const a = await findApp(ctx, appId).catch(() => undefined);
  const p = a && (await findProcess(tx, appId, processId).catch(() => undefined));
  if (!a || !p) return socket.close(CLOSE.notFound, 'Application or process not found');
  const release = await currentRelease(tx, a.id);
  if (!release || a.is_suspended || a.status === 'deleting' || !p.rolled_out_at)
    return socket.close(CLOSE.notRunning, 'No running instance of the process to connect to; deploy the application first');
  const env = await resolveEnvironment(ctx, a, systemVariables(app.config.brandPrefix, a, release), 'runtime');
  if (socket.readyState !== socket.OPEN) return;

  const { idleMs, maxMs } = app.config.terminal;
  const send = (text: string) => {
    if (socket.readyState === socket.OPEN) socket.send(text);
  };
  let ended = false;
  const end = (reason: string, notice?: string) => {
    if (ended) return;
    ended = true;
    clearTimeout(idle);
    clearTimeout(max);
    session.close();
    if (notice) send(`\n${notice}\n`);
    if (socket.readyState === socket.OPEN) socket.close(CLOSE.closed, reason);
  };
  const spec = { shell, hostname: `${a.name}-${p.key}-${idDigits(p.id, 5)}`, env: env.vars };
  const io = { output: send, exit: (status: number) => end(`Shell exited with status ${status}`) };
  const session = app.runtimes.applications.openShell(ctx, a.id, release.build_of ?? release.id, spec, io);
  const idleNotice = `Session closed: no input for ${Math.round(idleMs / 1000)} s`;
  let idle = setTimeout(() => end('Idle timeout', idleNotice), idleMs);
  const max = setTimeout(() => end('Maximum session time reached', `Session closed: it reached its maximum length of ${Math.round(maxMs / 1000)} s`), maxMs);
  const input = (t: string) => {
    if (ended) return;
    clearTimeout(idle);
    idle = setTimeout(() => end('Idle timeout', idleNotice), idleMs);
    session.input(t);
  };
  socket.off('message', keep);
  socket.on('message', (data) => input(text(data)));
  socket.on('close', () => end('Client closed'));
  for (const t of early) input(t);
}

const text = (data: RawData) => (Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)).toString('utf8');
