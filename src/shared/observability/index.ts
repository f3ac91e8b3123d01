// Metrics, traces and the request journal of one server, wired in by createServer
// (docs/operations.md "Metrics", "Traces", "Request journal").
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { requireBearer } from '../auth/tokens.js';
import { ApiError } from '../errors.js';
import { Journal } from './journal.js';
import { Metrics, type DeliveryOutcome } from './metrics.js';
import { observabilitySettings, type ObservabilitySettings } from './settings.js';
import { startTracing, stopTracing, type Tracer } from './trace.js';

export { activeTraceparent, inSpan, tracer } from './trace.js';
export { MASK, type JournalEntry, type JournalQuery } from './journal.js';
export type { DeliveryOutcome, JobOutcome } from './metrics.js';

export interface Observability {
  settings: ObservabilitySettings;
  metrics?: Metrics;
  journal?: Journal;
  tracer?: Tracer;
  /** Every answered request, from the server's log controller (one call, no hook of its own). */
  completed(req: FastifyRequest, reply: FastifyReply): void;
  close(): Promise<void>;
}

const byApp = new WeakMap<AppContext, Observability>();

/** The server's observability (undefined before `observe`). */
export const observability = (app: AppContext): Observability | undefined => byApp.get(app);

/** Counts a webhook delivery attempt's outcome. */
export function deliveryOutcome(app: AppContext, outcome: DeliveryOutcome): void {
  byApp.get(app)?.metrics?.delivery(outcome);
}

/**
 * Sets up what the settings ask for: metrics (and what counts into them: the rate limiter, the job
 * engine, the edge), the journal, and tracing (its SDK loaded only then). Called once the modules
 * are set up (the edge exists) and before the operations are registered (they run in the
 * request's span).
 */
export async function observe(fastify: FastifyInstance, app: AppContext): Promise<Observability> {
  const settings = observabilitySettings(app.config.observability.env);
  const metrics = settings.metrics ? new Metrics(app.database) : undefined;
  const journal = settings.journal.enabled ? new Journal(settings.journal, app.database, app.log) : undefined;
  const tracer = await startTracing(settings, (e) => app.log.warn({ err: e.message }, 'sending spans failed'));
  // Off, it is still a route of the API (not a page of the dashboard).
  if (!metrics) fastify.get('/metrics', async () => Promise.reject(new ApiError(404, 'Metrics are off (SLIPWAY_METRICS=off)')));
  else {
    app.limiter.onRejected = (tier) => metrics.rateLimited(tier);
    app.jobs.observer = (kind, outcome) => metrics.job(kind, outcome);
    app.runtimes.edge?.onServed((s) => metrics.edgeServed(s));
    fastify.get('/metrics', async (req, reply) => {
      requireBearer(
        req.headers.authorization,
        [app.config.operatorToken, settings.metricsToken],
        'Metrics need a token: start the server with SLIPWAY_OPERATOR_TOKEN or SLIPWAY_METRICS_TOKEN set',
      );
      const text = await metrics.registry.metrics();
      return reply.type(metrics.registry.contentType).send(text);
    });
  }
  // Hooks only for what is on: each costs every request.
  // The journal's entry of a request is committed before its response is sent (journal.ts);
  // `completed` records those that bypass onSend (a hijacked reply) once they end.
  const journaled = new WeakSet<FastifyRequest>();
  const record = (j: Journal, req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    journaled.add(req);
    const idem = req.headers['idempotency-key'];
    return j.record({
      method: req.method,
      url: req.url,
      status: reply.statusCode,
      durationMs: reply.elapsedTime,
      keyId: req.auth?.key.id ?? null,
      requestId: String(req.id),
      idempotencyKey: typeof idem === 'string' ? idem : null,
      body: req.body,
      payload,
    });
  };
  if (journal) {
    fastify.addHook('onSend', async (req, reply, payload) => {
      if (req.url.startsWith('/v3/')) await record(journal, req, reply, payload);
      return payload;
    });
  }
  if (tracer) {
    fastify.addHook('onRequest', (req, _reply, done) => {
      tracer.startRequest(req);
      done();
    });
  }
  const o: Observability = {
    settings,
    metrics,
    journal,
    tracer,
    completed(req, reply) {
      const status = reply.statusCode;
      if (metrics) {
        const op = req.routeOptions.config?.op;
        if (op) metrics.request(op, op.contract.operationId, req.method, status, reply.elapsedTime / 1000);
        else {
          const route = req.routeOptions.url ?? 'unknown';
          metrics.request(`${req.method} ${route}`, route, req.method, status, reply.elapsedTime / 1000);
        }
      }
      tracer?.endRequest(req, status);
      if (journal && req.url.startsWith('/v3/') && !journaled.has(req)) void record(journal, req, reply, undefined);
    },
    close: async () => {
      await journal?.close();
      if (tracer) await stopTracing();
    },
  };
  byApp.set(app, o);
  return o;
}
