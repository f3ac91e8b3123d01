// Turns operation declarations into Fastify routes. The request path through one route:
//   onRequest:  authenticate (401) -> params checked, unused if invalid -> rate limit (429)
//               -> company state (403) -> permission (403) -> invalid params (400)
//   validation: params, query, body against the declared schemas (400)
//   preHandler: resource scope of the key (404), references named in the request
// (Hooks are registered only on the operations that need them.)
//   handler:    idempotency replay -> transaction { claim key, service call, store response }
// WebSocket operations (`upgrade: 'websocket'`, served through @fastify/websocket) run the same
// hooks before the upgrade and their `handler` as a last check in preHandler; then a plain request
// gets 426 and an upgraded one is handed to the operation's `websocket`.
import type {} from '@fastify/websocket';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { assertCompanyAllows, authenticate, type AuthContext } from '../auth/authenticate.js';
import { missingPermissionMessage, type Permission } from '../auth/rbac.js';
import type { AppContext, Scope } from '../context.js';
import { ApiError, forbidden, notFound } from '../errors.js';
import * as idem from '../idempotency.js';
import { bucketFor, headersFor, type RateLimiter, type RateState } from '../ratelimit.js';
import { isWrite, type Operation } from './operation.js';
import { checkReferences } from './references.js';
import { isSharedResult } from '../shared-results.js';
import { madeJobsDue } from '../jobs.js';
import { committed } from '../db/after-commit.js';
import { checkingPurity, runPure } from '../purity.js';
import { inSpan, tracer, type Tracer } from '../observability/trace.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth?: AuthContext;
    scope?: Scope;
    /** A pure read's count, still running while the request goes on (see `countedAfter`). */
    counting?: Promise<RateState>;
  }
  interface FastifyContextConfig {
    op?: Operation;
  }
}

class Replay {
  constructor(public stored: idem.StoredResponse) {}
}

export const toFastifyPath = (p: string) => p.replace(/\{([^}]+)\}/g, ':$1');

export function resourceParamOf(op: Operation): string | null {
  if (op.resourceParam !== undefined) return op.resourceParam;
  return op.contract.path.includes('{id}') ? 'id' : null;
}

/** Authenticates and counts the request; anonymous or unauthenticated requests count per client IP. */
export async function admit(app: AppContext, limiter: RateLimiter, req: FastifyRequest, reply: FastifyReply, op?: Operation): Promise<void> {
  const anonymous = op?.auth === 'none';
  let auth: AuthContext | undefined;
  if (!anonymous) {
    try {
      // Reads share the turn's content version (see authenticate).
      const read = req.method === 'GET' || req.method === 'HEAD';
      auth = await authenticate(app.database.db, app.keys, req.headers.authorization, read);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      const s = await limiter.hit(`ip:${req.ip}`, 'unauthenticated');
      reply.headers(headersFor(s));
      if (op) throw e; // unknown routes fall through to the 404
      return;
    }
  }
  if (!auth) {
    reply.headers(headersFor(await limiter.hit(`ip:${req.ip}`, 'unauthenticated')));
    return;
  }
  req.auth = auth;
  const tier = op?.tier ?? 'read';
  const rp = op ? resourceParamOf(op) : null;
  // Path parameters are checked against the operation's schema before anything uses them: an
  // invalid one never becomes part of a rate-limit bucket (nor reaches a query); the request is
  // counted without it and answered 400 once the company and permission checks have run.
  const paramsError = op?.contract.params ? invalidParams(req) : undefined;
  const serviceId = rp && !paramsError ? (req.params as Record<string, string>)[rp] : undefined;
  const bucket = bucketFor(tier, auth.company.id, op?.contract.operationId ?? '-', serviceId);
  if (op?.pure && limiter.roomFor(bucket, tier)) {
    // Counted while the request goes on; answered (or refused) once the count is in: countedAfter.
    const counting = limiter.hit(bucket, tier);
    counting.catch(() => {});
    req.counting = counting;
  } else reply.headers(headersFor(await limiter.hit(bucket, tier)));
  if (!op) return;
  assertCompanyAllows(auth.company, isWrite(op.contract.method));
  req.scope = null;
  if (op.permission) {
    const g = auth.grants.get(op.permission);
    // Creating, and company-wide operations, need the permission for the whole company.
    const wholeCompany = op.companyWide || (op.permission.endsWith(':CREATE') && !rp);
    if (!g || (!g.all && (g.ids.size === 0 || wholeCompany))) throw forbidden(missingPermissionMessage(op.permission));
    // A key granted some resources only: lists show those (the path's resource is checked in preHandler).
    if (!g.all && !rp) req.scope = g.ids;
  }
  if (paramsError) throw paramsError;
}

/**
 * The count of a pure read that ran while it was counted (see Operation.pure), awaited before the
 * request is answered, with a result or an error: sets its headers, and returns its 429 when the
 * request is over the limit (that answer replaces the other). Nothing when there is none.
 */
export async function countedAfter(req: FastifyRequest, reply: FastifyReply): Promise<ApiError | undefined> {
  const counting = req.counting;
  if (!counting) return undefined;
  req.counting = undefined;
  try {
    reply.headers(headersFor(await counting));
    return undefined;
  } catch (e) {
    if (e instanceof ApiError && e.status === 429) return e;
    throw e;
  }
}

/** The validation error of the route's params schema for this request's path, if any. */
function invalidParams(req: FastifyRequest): unknown {
  const validate = req.getValidationFunction('params') as unknown as ((data: unknown) => { error?: unknown }) | undefined;
  return validate?.(req.params)?.error;
}

export function registerOperations(fastify: FastifyInstance, app: AppContext, limiter: RateLimiter, ops: Operation[]): void {
  // When tracing, a handler runs in its request's span (its transaction and the jobs it queues are children).
  const traced = tracer();
  for (const op of ops) {
    const c = op.contract;
    const rp = resourceParamOf(op);
    const schema: Record<string, unknown> = {};
    if (c.params) schema.params = c.params;
    if (c.querystring) schema.querystring = c.querystring;
    if (c.body) schema.body = c.body;
    if (c.response) schema.response = { [c.success]: c.response };
    /** Shared results (see shared-results.ts) this operation has answered with, serialized. */
    const serialized = new WeakMap<object, string>();
    fastify.route(
      inRequestSpan(traced, {
        method: c.method,
        url: `/v3${toFastifyPath(c.path)}`,
        schema,
        config: { op },
        onRequest: async (req, reply) => admit(app, limiter, req, reply, op),
        // Hooks only where the operation needs them: each costs every request that passes it.
        ...(c.body
          ? {
              // A request without body bytes has no body (Fastify would present it as null, which
              // is also what a JSON `null` body parses to); the body validator tells the two apart by this.
              preValidation: async (req: FastifyRequest) => {
                if (Number(req.headers['content-length']) > 0 || req.headers['transfer-encoding'] !== undefined) return;
                // An absent optional object body means "no options": validated and handled as `{}`.
                req.body = !c.bodyRequired && (c.body as { type?: unknown }).type === 'object' ? {} : undefined;
                if (c.bodyRequired)
                  throw Object.assign(new Error('missing body'), {
                    validation: [{ instancePath: '', message: 'a JSON body is required' }],
                    validationContext: 'body',
                  });
              },
            }
          : {}),
        ...(rp || op.references?.length || op.upgrade
          ? {
              preHandler: async (req: FastifyRequest) => {
                const auth = req.auth;
                if (!auth) return;
                const g = op.permission ? auth.grants.get(op.permission as Permission)! : undefined;
                // A key granted some resources only: any other is not found.
                if (g && !g.all && rp && !g.ids.has((req.params as Record<string, string>)[rp]!)) throw notFound();
                if (op.references?.length) await checkReferences(op.references, requestContext(app, req), auth, { body: req.body, query: req.query });
                // A WebSocket operation's own checks (e.g. 404) answer before any upgrade.
                if (op.upgrade) await op.handler(requestContext(app, req) as never);
              },
            }
          : {}),
        ...(op.upgrade
          ? {
              wsHandler: (socket, req) =>
                op.websocket!(socket, requestContext(app, req) as never).catch((e) => {
                  req.log.error({ err: e }, 'websocket session failed');
                  socket.close(4300, 'Unexpected server error');
                }),
            }
          : {}),
        handler: async (req, reply) => {
          if (op.upgrade) throw new ApiError(426, 'Upgrade Required: connect with a WebSocket client (Upgrade: websocket)', undefined, { upgrade: op.upgrade });
          const write = isWrite(c.method);
          const auth = req.auth as AuthContext;
          const ctx = requestContext(app, req);
          const key = write && auth ? idempotencyKey(req) : undefined;
          // A handler is counted while it runs (`foreground`): meanwhile the job runner takes fewer
          // new jobs. Counted inline, not by a wrapper: an extra async frame per request shows on reads.
          if (!write) {
            let result: unknown;
            app.jobs.foreground++;
            try {
              result = checkingPurity && op.pure ? await runPure(c.operationId, () => op.handler(ctx as never)) : await op.handler(ctx as never);
            } finally {
              app.jobs.foreground--;
            }
            const limited = await countedAfter(req, reply);
            if (limited) throw limited;
            return isSharedResult(result) ? sendShared(reply, c.success, result, serialized) : send(reply, c.success, result);
          }
          const companyId = auth?.company.id;
          const fp = key ? idem.fingerprint(c.method, req.url, req.body) : '';
          if (key && companyId) {
            const prior = await idem.lookup(app.database.db, companyId, key, fp);
            if (prior) return replay(reply, prior);
          }
          app.jobs.foreground++;
          try {
            // Whether the write queued work due now: the job runners are woken once it committed.
            let due = false;
            let done: object = app.database.db;
            const body =
              op.singleWrite && !key && app.database.kind === 'postgres'
                ? await op.handler(ctx as never)
                : await inSpan('db.transaction', () =>
                    app.database.db.transaction().execute(async (tx) => {
                      done = tx;
                      if (key && companyId && !(await idem.claim(tx, companyId, key, fp))) {
                        throw new Replay((await idem.lookup(tx, companyId, key, fp)) ?? { status: 409, body: undefined });
                      }
                      const result = await op.handler({ ...ctx, tx } as never);
                      if (key && companyId) await idem.complete(tx, companyId, key, { status: c.success, body: result });
                      due = madeJobsDue(tx);
                      return result;
                    }),
                  );
            if (due) app.jobs.wake();
            // What must see the write committed (the edge serving a changed setting) before the answer.
            await committed(done);
            await app.keys.announced();
            return send(reply, c.success, body);
          } catch (e) {
            if (e instanceof Replay) {
              if (e.stored.status === 409) throw new ApiError(409, 'A request with this Idempotency-Key is still being processed; retry shortly.');
              return replay(reply, e.stored);
            }
            if (key && companyId && e instanceof ApiError && e.status < 500 && e.status !== 429) {
              await idem.recordFailure(app.database.db, companyId, key, fp, { status: e.status, body: e.body() });
            }
            throw e;
          } finally {
            app.jobs.foreground--;
          }
        },
      }),
    );
  }
}

/** The route, its handler run in its request's span when tracing. */
function inRequestSpan(traced: Tracer | undefined, route: RouteOptions): RouteOptions {
  if (!traced) return route;
  const handle = route.handler;
  return {
    ...route,
    handler(req, reply) {
      return traced.within(req, async () => handle.call(this, req, reply));
    },
  };
}

/** What a handler receives: the call context plus the request's validated parts. */
function requestContext(app: AppContext, req: FastifyRequest) {
  const auth = req.auth as AuthContext;
  return {
    app,
    params: req.params,
    query: req.query,
    body: req.body,
    auth,
    tx: app.database.db,
    companyId: auth?.company.id ?? '',
    actor: auth?.key.id ?? null,
    grants: auth?.grants ?? null,
    scope: req.scope ?? null,
    asOf: auth?.asOf,
    ip: req.ip,
    requestId: String(req.id),
    headers: req.headers,
  };
}

function idempotencyKey(req: FastifyRequest): string | undefined {
  const v = req.headers['idempotency-key'];
  if (v === undefined) return undefined;
  const s = Array.isArray(v) ? v[0] : v;
  if (!s || s.length > 255) throw new ApiError(400, 'Idempotency-Key must be 1 to 255 characters');
  return s;
}

function send(reply: FastifyReply, status: number, body: unknown) {
  reply.status(status);
  if (status === 204 || body === undefined) return reply.send();
  return reply.send(body);
}

/** A result shared by many requests: serialized by the route's response schema once, then sent as it is. */
function sendShared(reply: FastifyReply, status: number, result: object, serialized: WeakMap<object, string>) {
  reply.status(status);
  let body = serialized.get(result);
  if (body === undefined) serialized.set(result, (body = reply.serialize(result) as string));
  reply.type('application/json; charset=utf-8');
  return reply.send(body);
}

function replay(reply: FastifyReply, stored: idem.StoredResponse) {
  reply.header('idempotent-replayed', 'true');
  reply.status(stored.status);
  // Replayed bodies were already serialized once; send them verbatim.
  if (stored.body === undefined) return reply.send();
  reply.type('application/json');
  return reply.serializer((x: unknown) => JSON.stringify(x)).send(stored.body);
}
