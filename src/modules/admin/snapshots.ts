// State snapshots on the operator surface: GET /_admin/snapshots[?company=ID][&objects=true] exports,
// POST /_admin/snapshots[?replace=1] imports (src/shared/snapshots); object storage gives the
// buckets' bytes. Registered inside /_admin, behind its operator token. Both stream: the export is
// written to the response as it is read, and the import reads the request body as it arrives, so
// neither holds the stored objects in memory, and the API's body limit does not apply here.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../shared/context.js';
import { exportSnapshot, importSnapshot } from '../../shared/snapshots/index.js';
import { snapshotObjects } from '../object-storage/index.js';

const yes = (v: unknown) => ['1', 'true'].includes(String(v ?? ''));

export function registerSnapshots(r: FastifyInstance, app: AppContext): void {
  // Made now: a bad SLIPWAY_OBJECT_STORAGE_SNAPSHOT_MAX_BYTES stops the server at start.
  const external = snapshotObjects(app);
  r.register(async (s) => {
    // Whatever its content type (application/json, or none given by `curl --data-binary`), the body
    // reaches the handler unread, as the request's stream: the import parses it as it arrives
    // (shared/snapshots/stream.ts), so Fastify's body limit and the API's JSON limits are not involved.
    s.removeAllContentTypeParsers();
    s.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    s.get('/snapshots', async (req, reply) => {
      const q = req.query as { company?: string; objects?: string };
      const body = await exportSnapshot(app, { company: q.company || null, external, objects: yes(q.objects) });
      return reply.type('application/json; charset=utf-8').send(body);
    });
    s.post('/snapshots', async (req, reply) => {
      const replace = yes((req.query as { replace?: string }).replace);
      try {
        return reply.status(201).send(await importSnapshot(app, req.body, { replace, external }));
      } finally {
        // Refused before the body was read to its end (a 409 for a server that holds state, a
        // document cut short): the rest stays unread, so the connection closes with the answer
        // instead of serving another request behind it (nor reading the rest only to drop it).
        if (!req.raw.complete) reply.header('connection', 'close');
      }
    });
  });
}
