// The receiving end of the edge's access log for the bench, in a process of its own as Slipway's
// would be: src/shared/edge/nginx/access-log.ts's receiver, whose batches are counted and dropped.
// Prints `listening <host:port>`; answers a line `count` on stdin with `received <n> unreadable <n>
// dropped <n> lines <n>`; exits when stdin closes.
import { createInterface } from 'node:readline';
import { AccessLogReceiver } from '../../src/shared/edge/nginx/access-log.js';

let lines = 0;
const receiver = new AccessLogReceiver((batch) => void (lines += batch.length));
console.log(`listening ${await receiver.start()}`);
const input = createInterface({ input: process.stdin });
input.on('line', async (l) => {
  if (l.trim() !== 'count') return;
  await receiver.flush();
  const c = receiver.counts;
  console.log(`received ${c.received} unreadable ${c.unreadable} dropped ${c.dropped} lines ${lines}`);
});
input.on('close', () => void receiver.stop().then(() => process.exit(0)));
process.on('SIGTERM', () => void receiver.stop().then(() => process.exit(0)));
