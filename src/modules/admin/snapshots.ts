// State snapshots on the operator surface: GET /_admin/snapshots[?company=ID][&objects=true] exports,
// POST /_admin/snapshots[?replace=1] imports (src/shared/snapshots); object storage gives the
// buckets' bytes. Registered inside /_admin, behind its operator token.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../shared/context.js';
import { ApiError } from '../../shared/errors.js';
import { exportSnapshot, importSnapshot } from '../../shared/snapshots/index.js';
import { snapshotObjects } from '../object-storage/index.js';

/** A snapshot is a document of state, not an API body: larger than the API's body limit, and with long strings. */
const SNAPSHOT_BODY_LIMIT = 1024 * 1024 * 1024;

const yes = (v: unknown) => ['1', 'true'].includes(String(v ?? ''));

export function registerSnapshots(r: FastifyInstance, app: AppContext): void {
  // Made now: a bad SLIPWAY_OBJECT_STORAGE_SNAPSHOT_MAX_BYTES stops the server at start.
  const external = snapshotObjects(app);
  r.register(async (s) => {
    // The API's JSON parser limits string lengths and depth (shared/http/input.ts) for request
    // bodies; a snapshot carries stored payloads and is parsed as plain JSON here.
    s.removeAllContentTypeParsers();
    s.addContentTypeParser(/^application\/([\w.+-]+\+)?json(;.*)?$/i, { parseAs: 'string', bodyLimit: SNAPSHOT_BODY_LIMIT }, (_req, raw, done) => {
      try {
        done(null, JSON.parse(String(raw)));
      } catch {
        done(new ApiError(400, 'The snapshot is not valid JSON'), undefined);
      }
    });
    s.get('/snapshots', async (req) => {
      const q = req.query as { company?: string; objects?: string };
      return exportSnapshot(app, { company: q.company || null, external, objects: yes(q.objects) });
    });
    s.post('/snapshots', { bodyLimit: SNAPSHOT_BODY_LIMIT }, async (req, reply) => {
      const replace = yes((req.query as { replace?: string }).replace);
      return reply.status(201).send(await importSnapshot(app, req.body, { replace, external }));
    });
  });
}
