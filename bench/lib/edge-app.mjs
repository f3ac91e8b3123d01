// The small app the edge scenarios proxy to: Node's own HTTP server answering every request with the
// same ~200-byte text (as in /work/shared/notes/edge-proxies.md). Listens on a free port of
// 127.0.0.1 and prints `listening <port>`.
import { createServer } from 'node:http';

const body = 'Hello from a small app behind the edge. '.padEnd(205, 'The same 206 bytes on every request. ') + '\n';
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
// Longer than the proxies' idle upstream connections stay in their pools, as apps behind a proxy are set.
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
const stop = () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
