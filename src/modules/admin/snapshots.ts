// State snapshots on the operator surface: GET /_admin/snapshots[?company=ID] exports,
// POST /_admin/snapshots[?replace=1] imports (src/shared/snapshots). Registered inside /_admin,
// behind its operator token.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../shared/context.js';
import { ApiError } from '../../shared/errors.js';
import { exportSnapshot, importSnapshot } from '../../shared/snapshots/index.js';

/** A snapshot is a document of state, not an API body: larger than the API's body limit, and with long strings. */
const SNAPSHOT_BODY_LIMIT = 1024 * 1024 * 1024;

export function registerSnapshots(r: FastifyInstance, app: AppContext): void {
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
    s.get('/snapshots', async (req) => exportSnapshot(app, { company: (req.query as { company?: string }).company || null }));
    s.post('/snapshots', { bodyLimit: SNAPSHOT_BODY_LIMIT }, async (req, reply) => {
      const replace = ['1', 'true'].includes(String((req.query as { replace?: string }).replace ?? ''));
      return reply.status(201).send(await importSnapshot(app, req.body, { replace }));
    });
  });
}
