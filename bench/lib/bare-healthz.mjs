// The baseline of the cold-start benchmark: a bare Fastify app answering GET /healthz, started
// the way `slipway serve` is (`node <file> --port <n>`).
import Fastify from 'fastify';

const port = Number(process.argv[process.argv.indexOf('--port') + 1]);
const app = Fastify();
app.get('/healthz', async () => ({ status: 'ok' }));
await app.listen({ port, host: '127.0.0.1' });
const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
