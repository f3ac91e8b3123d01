// The baseline of the read benchmarks: a bare Fastify app (no logger, no auth, no database)
// answering GET /page with a fixed JSON page read from `--page <file>` (the same 25-item page
// Slipway serves), started the way `slipway serve` is (`node <file> --port <n>`).
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
const page = JSON.parse(readFileSync(arg('--page'), 'utf8'));
const app = Fastify();
app.get('/page', async () => page);
await app.listen({ port: Number(arg('--port')), host: '127.0.0.1' });
console.log('listening');
const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
