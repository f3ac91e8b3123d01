// Assembles the server: configuration, database, shared HTTP machinery and every module.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import websocket from '@fastify/websocket';
import pino from 'pino';
import AjvModule from 'ajv';
import formatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { Config } from './shared/config.js';
import { createAppContext, type AppContext } from './shared/context.js';
import { migrate, openDatabase, type Database } from './shared/db/index.js';
import { ApiError, SCHEMA_MISMATCH } from './shared/errors.js';
import { buildOpenApi } from './shared/http/openapi.js';
import { dashboard, findDashboardDir } from './shared/http/dashboard.js';
import type { Operation } from './shared/http/operation.js';
import { parseJsonBody } from './shared/http/input.js';
import { admit, countedAfter, registerOperations } from './shared/http/router.js';
import * as idem from './shared/idempotency.js';
import { UUID_RE } from './shared/ids.js';
import { startMaintenance } from './shared/db/vacuum.js';
import { moduleMigrations, modules } from './modules/index.js';
import { registerAdmin } from './modules/admin/routes.js';
import { bootstrap, type BootstrapResult } from './modules/accounts/service.js';
import { loadTls } from './shared/tls.js';
import { observe } from './shared/observability/index.js';

export interface Server {
  fastify: FastifyInstance;
  app: AppContext;
  operations: Operation[];
  bootstrap: BootstrapResult;
  tlsCaPath?: string;
  listen(): Promise<string>;
  close(): Promise<void>;
}

// ajv and ajv-formats are CommonJS modules with a `default` export.
const Ajv = ((AjvModule as any).default ?? AjvModule) as typeof AjvModule.default;
const addFormats = ((formatsModule as any).default ?? formatsModule) as typeof formatsModule.default;

const eagerSerializers = SerializerSelector();
/** Fastify's own serializer factory (fast-json-stringify), building each route's serializer on its first response. */
const lazySerializers: typeof eagerSerializers = (externalSchemas, options) => {
  const build = eagerSerializers(externalSchemas, options);
  return (route) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data: unknown) => (serialize ??= build(route))(data);
  };
};

/**
 * One log line per request, when it completes (method, URL, status, time), instead of Fastify's
 * two: the log line was a measurable share of a read's cost.
 */
class OneLinePerRequest extends LogController {
  /** Metrics, traces and the journal of the request (src/shared/observability): told here, not by a hook of their own. */
  completed?: (request: FastifyRequest, reply: FastifyReply) => void;
  override incomingRequest(): void {}
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    this.completed?.(request, reply);
    const line = { method: request.method, url: request.url, statusCode: reply.statusCode, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/**
 * Where the server's log lines go unless the caller gives a logger: standard output, written
 * asynchronously. A synchronous write was a system call per request, a measurable share of a
 * read's cost; written asynchronously, the lines logged while a write is under way go out together
 * in the next one, so an idle server still writes each line at once. What is still buffered is
 * written out synchronously when the process exits (pino registers that), but a process killed
 * with SIGKILL loses it. At most 16 MiB wait for a reader that does not keep up; beyond that lines
 * are dropped instead of the memory growing. One per process: every server of a process shares it.
 */
let stdoutLog: ReturnType<typeof pino.destination> | undefined;
const logDestination = () => (stdoutLog ??= pino.destination({ dest: 1, sync: false, maxLength: 16 * 1024 * 1024 }));

function makeAjv(coerce: boolean, useDefaults = true) {
  const ajv = new Ajv({ allErrors: true, coerceTypes: coerce ? 'array' : false, useDefaults, removeAdditional: false, strict: false });
  addFormats(ajv);
  return ajv;
}

/** Connections answered 408 by clientError: a request cut there is the client's delay, not a fault. */
const timedOut = new WeakSet<Duplex>();

/**
 * Answers an HTTP parser error or an expired request deadline on the raw socket with the contract's
 * error body (there is no request to reply to), then closes the connection.
 */
function clientError(err: NodeJS.ErrnoException, socket: Duplex, limits: Config['http']): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') timedOut.add(socket);
  const [status, message] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, `The request did not arrive in time (headers within ${limits.headersTimeoutMs} ms, the whole request within ${limits.requestTimeoutMs} ms)`]
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'The request line and headers are larger than the limit (16 KiB)']
        : [400, 'The request is not valid HTTP/1.1'];
  const body = JSON.stringify({ message, status });
  // Not in the middle of a response already being sent on this connection.
  const inFlight = (socket as any)._httpMessage;
  if (socket.writable && !(inFlight && inFlight.headersSent)) {
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  // A client that does not read the response does not hold the socket either.
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** Closes a new connection at once when its address already has `max` open (0: no cap). */
function capConnectionsPerIp(server: { on(event: 'connection', cb: (socket: Socket) => void): unknown }, max: number): void {
  if (!max) return;
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    const ip = socket.remoteAddress;
    if (!ip) return void socket.destroy();
    const n = (open.get(ip) ?? 0) + 1;
    if (n > max) return void socket.destroy();
    open.set(ip, n);
    socket.once('close', () => {
      const left = (open.get(ip) ?? 1) - 1;
      if (left > 0) open.set(ip, left);
      else open.delete(ip);
    });
  });
}

export async function createServer(config: Config, opts: { database?: Database; logger?: FastifyServerOptions['logger'] } = {}): Promise<Server> {
  const database = opts.database ?? openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, groupCommit: config.sqliteGroupCommit });
  await migrate(database.db, moduleMigrations());
  const tls = config.tls ? await loadTls(config.tls, config.dataDir) : undefined;

  const limits = config.http;
  // Node checks request and header deadlines on this interval (its default, 30 s, would let a
  // stalled request live up to twice the deadline).
  const nodeHttp = {
    headersTimeout: limits.headersTimeoutMs,
    connectionsCheckingInterval: Math.max(50, Math.min(5_000, Math.floor(limits.headersTimeoutMs / 4))),
  };
  const logController = new OneLinePerRequest();
  const fastify = Fastify({
    logger: opts.logger ?? { level: config.logLevel, ...(config.logLevel === 'silent' ? {} : { stream: logDestination() }) },
    logController,
    // Response serializers are built on first use too (see the validator compiler below).
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } },
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    requestIdHeader: false,
    // Modules may route by Host (virtual-hosted object storage buckets); `app` exists by the first request.
    rewriteUrl: (req) => {
      for (const m of modules) {
        const url = m.rewriteUrl?.(app, req.headers.host, req.url ?? '/');
        if (url !== undefined) return url;
      }
      return req.url ?? '/';
    },
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && UUID_RE.test(incoming) ? incoming.toLowerCase() : randomUUID();
    },
    routerOptions: { maxParamLength: limits.maxParamLength },
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionTimeout: limits.connectionTimeoutMs,
    http: nodeHttp,
    // Errors of the router (bad percent-encoding, over-long path parameters): the contract's body.
    frameworkErrors: (err: Error & { code?: string }, req: any, reply: any) => {
      const message =
        err.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? `A path parameter is longer than ${limits.maxParamLength} characters`
          : err.code === 'FST_ERR_BAD_URL'
            ? 'The request path is not valid percent-encoded UTF-8'
            : 'The request is malformed';
      return reply.status(400).header('x-request-id', req.id).send({ message, status: 400 });
    },
    // Errors of Node's HTTP parser and deadlines, before there is a request: a raw response.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket: Duplex) => clientError(err, socket, limits),
    ...(tls ? { https: { cert: tls.cert, key: tls.key, ...nodeHttp } } : {}),
  } as FastifyServerOptions);
  capConnectionsPerIp(fastify.server, limits.maxConnectionsPerIp);

  const scheme = tls ? 'https' : 'http';
  const app = createAppContext(
    config,
    database,
    fastify.log,
    config.publicUrl ?? `${scheme}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`,
  );
  const limiter = app.limiter;

  // Bodies: JSON only; an empty body is "no body", `null` is a valid JSON body.
  fastify.removeContentTypeParser(['application/json']);
  // Depth, NUL characters, string length and non-finite numbers are checked here, once for every
  // operation (src/shared/http/input.ts).
  const inputLimits = { maxDepth: limits.maxJsonDepth, maxString: limits.maxStringLength };
  fastify.addContentTypeParser(/^application\/([\w.+-]+\+)?json(;.*)?$/i, { parseAs: 'string' }, (_req, raw, done) => {
    const text = String(raw);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, parseJsonBody(text, inputLimits));
    } catch (e) {
      done(e instanceof ApiError ? e : new ApiError(400, 'The request body is not valid JSON'), undefined);
    }
  });
  fastify.removeContentTypeParser(['text/plain']);

  // Request parts: bodies are validated strictly; path and query strings are coerced to types.
  const bodyAjv = makeAjv(false);
  // A PATCH changes only what it names: schema defaults must not fill in (and so reset) the rest.
  const patchAjv = makeAjv(false, false);
  const paramAjv = makeAjv(true);
  fastify.setValidatorCompiler(({ schema, httpPart, method }) => {
    const ajv = httpPart !== 'body' ? paramAjv : method === 'PATCH' ? patchAjv : bodyAjv;
    // Compiled on first use, so a start does not pay for every route's validators (cold start).
    let validate: ValidateFunction | undefined;
    return (data: unknown) => {
      validate ??= ajv.compile(schema);
      return validate(data)
        ? { value: data }
        : { error: Object.assign(new Error(`invalid ${httpPart}`), { validation: validate.errors, validationContext: httpPart }) };
    };
  });

  // A callback, not an async function: this runs on every request, and a promise per hook shows.
  fastify.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    // A NUL anywhere in the path or query never reaches routing, rate-limit keys or queries.
    // eslint-disable-next-line no-control-regex -- a NUL is what this refuses
    if (/%00|\u0000/i.test(req.url)) return done(new ApiError(400, 'The request URL contains a NUL character (%00)'));
    if (config.production && !tls) {
      const proto = config.trustProxy ? req.headers['x-forwarded-proto'] : undefined;
      if (proto !== 'https' && !req.url.startsWith('/healthz') && !req.url.startsWith('/readyz'))
        return done(new ApiError(403, 'HTTPS is required: send the request over https:// (or through a trusted proxy that sets X-Forwarded-Proto: https).'));
    }
    done();
  });

  fastify.setErrorHandler(async (err: any, req, reply) => {
    // A pure read counted while it ran: over the limit its 429 is the answer, and its headers go
    // on any other (a failed count is the error then).
    err = (await countedAfter(req, reply).catch((e: unknown) => e)) ?? err;
    if (err instanceof ApiError) return reply.status(err.status).headers(err.headers).send(err.body());
    if (err.validation) {
      const op = req.routeOptions.config?.op;
      const where = err.validationContext === 'querystring' ? 'query' : (err.validationContext ?? 'body');
      const listed400 = op?.contract.errors.includes(400) ?? true;
      if (listed400) return reply.status(400).send({ message: SCHEMA_MISMATCH, status: 400 });
      const issues = (err.validation as any[]).map((v) => ({
        path: [
          where,
          ...String(v.instancePath ?? '')
            .split('/')
            .filter(Boolean),
          ...(v.params?.missingProperty ? [v.params.missingProperty] : []),
          ...(v.params?.additionalProperty ? [v.params.additionalProperty] : []),
        ].join('.'),
        message: v.message ?? 'is invalid',
      }));
      return reply.status(400).send({ message: SCHEMA_MISMATCH, status: 400, data: { issues } });
    }
    const status = typeof err.statusCode === 'number' ? err.statusCode : 500;
    if (status === 413) return reply.status(413).send({ message: `The request body is larger than the limit of ${config.bodyLimit} bytes`, status: 413 });
    if (status === 415) return reply.status(415).send({ message: 'Unsupported content type: send the body as application/json', status: 415 });
    if (status >= 400 && status < 500 && err.code?.startsWith?.('FST_')) return reply.status(400).send({ message: 'The request is malformed', status: 400 });
    // The connection closed before the request arrived whole (the deadline's 408, or the client
    // gave up): nobody is left to answer, and it is the client's doing, so no error and no stack.
    if (err.code === 'ECONNRESET' && req.raw.socket?.destroyed) {
      const line = { method: req.method, url: req.url };
      if (timedOut.has(req.raw.socket)) req.log.info(line, 'request timed out: answered 408, connection closed');
      else req.log.info(line, 'request abandoned: the client closed the connection before it arrived');
      return reply.status(timedOut.has(req.raw.socket) ? 408 : 400).send();
    }
    const code = `ERR-${randomUUID()}`;
    req.log.error({ err, code }, 'unhandled error');
    return reply.status(500).send({
      message: 'Internal server error; retry with exponential backoff',
      status: 500,
      data: { code, message: 'Quote this code when contacting support' },
    });
  });

  // The web dashboard answers GET requests no route matched (outside the API's prefixes).
  const serveDashboard = dashboard(config.dashboardDir ?? findDashboardDir());
  fastify.setNotFoundHandler(async (req, reply) => {
    if (req.url.startsWith('/v3/')) await admit(app, limiter, req, reply);
    else if (await serveDashboard(req, reply)) return reply;
    return reply.status(404).send({ message: `No route ${req.method} ${req.url.split('?')[0]}`, status: 404 });
  });

  // WebSocket operations (the process terminal): upgrades are routed through the same hooks first.
  await fastify.register(websocket, { options: { maxPayload: 64 * 1024 } });

  const operations: Operation[] = [];
  for (const m of modules) {
    m.setup?.(app);
    operations.push(...m.operations);
  }
  const observed = await observe(fastify, app);
  logController.completed = observed.completed;
  registerOperations(fastify, app, limiter, operations);

  let doc: unknown;
  fastify.get('/v3/openapi.json', async () => (doc ??= buildOpenApi(operations, `${app.baseUrl}/v3`)));
  fastify.get('/healthz', async () => ({ status: 'ok' }));
  fastify.get('/readyz', async (_req, reply) => {
    try {
      await database.db.selectFrom('settings').select('key').limit(1).execute();
      return { status: 'ready', database: database.kind };
    } catch {
      return reply.status(503).send({ status: 'unavailable', database: database.kind });
    }
  });
  registerAdmin(fastify, app);
  for (const m of modules) m.http?.(fastify, app);

  const boot = await bootstrap(app);
  await app.simulation.start();
  await app.keys.start();
  await app.jobs.start();
  await app.runtimes.edge?.start();
  for (const m of modules) await m.start?.(app);
  const sweeper = setInterval(() => {
    void limiter.sweep().catch(() => {});
    void idem.sweep(database.db).catch(() => {});
  }, 10 * 60_000);
  sweeper.unref();
  // PostgreSQL: the dead rows of the job queue, the rate windows and the list counts, vacuumed away
  // while they are few; the statistics of tables that grew or changed kept current.
  const stopMaintenance =
    database.kind === 'postgres' ? startMaintenance(database.db, (what, e) => fastify.log.warn({ err: e.message }, `${what} failed`)) : undefined;

  return {
    fastify,
    app,
    operations,
    bootstrap: boot,
    tlsCaPath: tls?.caPath,
    async listen() {
      const address = await fastify.listen({ port: config.port, host: config.host });
      const port = Number(new URL(address).port);
      if (!config.publicUrl) {
        app.baseUrl = `${scheme}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
        doc = undefined;
      }
      return app.baseUrl;
    },
    async close() {
      clearInterval(sweeper);
      stopMaintenance?.();
      await fastify.close();
      await app.jobs.stop();
      await app.runtimes.edge?.stop();
      for (const m of modules) await m.stop?.(app);
      app.simulation.stop();
      await observed.close();
      await app.keys.stop();
      await app.limiter.close();
      if (!opts.database) await database.close();
    },
  };
}
