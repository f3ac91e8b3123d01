// Idle keep-alive connections to an HTTP server, held by a process of its own (so its open file
// limit can be raised apart from the bench's, and its sockets cost the load generator nothing).
// `--port <n> --host <Host header> --count <n>`: opens <count> connections to 127.0.0.1:<port>, 200
// at a time, sends one GET / on each and reads the whole answer, then leaves them idle. Prints
// `opened <n> failed <n> <first error>`; answers a line `count` on stdin with `open <n>` (those the
// server has not closed); closes them all and exits when stdin closes.
import { connect } from 'node:net';
import { createInterface } from 'node:readline';

const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
const port = Number(arg('--port'));
const host = arg('--host');
const count = Number(arg('--count'));
const open = new Set();
let failed = 0;
let firstError = '';

/** One connection, open and idle after one answered request; false when that failed. */
function one() {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let head = '';
    let need = -1;
    let got = 0;
    const fail = (why) => {
      failed++;
      firstError ||= why;
      socket.destroy();
      resolve(false);
    };
    socket.setTimeout(30_000, () => fail('timeout'));
    socket.once('error', (e) => fail(e.code ?? e.message));
    socket.once('connect', () => socket.write(`GET / HTTP/1.1\r\nHost: ${host}\r\n\r\n`));
    socket.on('data', function read(chunk) {
      if (need < 0) {
        head += chunk.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        if (!head.startsWith('HTTP/1.1 200')) return fail(head.split('\r\n')[0]);
        need = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        got = head.length - end - 4;
      } else got += chunk.length;
      if (got < need) return;
      socket.off('data', read);
      socket.on('data', () => {}); // an idle connection is sent nothing
      socket.setTimeout(0);
      socket.removeAllListeners('error');
      socket.on('error', () => {});
      open.add(socket);
      socket.once('close', () => open.delete(socket));
      resolve(true);
    });
  });
}

let next = 0;
await Promise.all(
  Array.from({ length: Math.min(200, count) }, async () => {
    while (next < count) {
      next++;
      await one();
    }
  }),
);
console.log(`opened ${open.size} failed ${failed}${firstError ? ` ${firstError}` : ''}`);
const input = createInterface({ input: process.stdin });
input.on('line', (l) => l.trim() === 'count' && console.log(`open ${open.size}`));
input.on('close', () => {
  for (const s of open) s.destroy();
  process.exit(0);
});
