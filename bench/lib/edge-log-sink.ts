// The reading end of the edge's access log for the bench, in a process of its own as Slipway's
// would be: src/shared/edge/nginx/access-log.ts's tailer of the file nginx writes (its directory is
// the first argument; rotations reopen through that directory's NginxProcess), whose batches are
// counted and dropped. Prints `tailing <path>`; answers a line `count` on stdin with `received <n>
// unreadable <n> skipped <n> rotations <n> lines <n>`; exits when stdin closes.
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { AccessLogTailer } from '../../src/shared/edge/nginx/access-log.js';
import { NginxProcess } from '../../src/shared/edge/nginx/process.js';

const dir = process.argv[2];
if (!dir) throw new Error('usage: edge-log-sink.ts <nginx directory>');
const log = { info: () => {}, warn: (o: object, m: string) => console.error(`access log: ${m} ${JSON.stringify(o)}`) };
const nginx = new NginxProcess(dir, log);
let lines = 0;
const tailer = new AccessLogTailer((batch) => void (lines += batch.length), { path: join(dir, 'access.log'), reopen: () => nginx.reopenLogs(), log });
console.log(`tailing ${await tailer.start()}`);
const input = createInterface({ input: process.stdin });
input.on('line', async (l) => {
  if (l.trim() !== 'count') return;
  await tailer.flush();
  const c = tailer.counts;
  console.log(`received ${c.received} unreadable ${c.unreadable} skipped ${c.skipped} rotations ${c.rotations} lines ${lines}`);
});
input.on('close', () => void tailer.stop().then(() => process.exit(0)));
process.on('SIGTERM', () => void tailer.stop().then(() => process.exit(0)));
