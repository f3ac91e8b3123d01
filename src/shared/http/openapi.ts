// Builds the served OpenAPI 3.1 document from the same operation declarations that route and
// validate requests.
import { Type, type TSchema } from '@sinclair/typebox';
import { COMPONENT, ErrorBody, ValidationErrorBody } from '../schemas/common.js';
import { isWrite, type Operation } from './operation.js';

const ERROR_TEXT: Record<number, string> = {
  400: 'The request is invalid or does not match the schema',
  401: 'The API key is missing, malformed, unknown, disabled, expired or deleted',
  403: 'The key lacks the permission, or the company is suspended or under maintenance',
  404: 'The resource does not exist or this key cannot see it',
  409: 'The resource is in a state that does not allow this change',
  413: 'The request body is too large',
  415: 'The request body is not JSON',
  426: 'This endpoint needs a protocol upgrade',
  429: 'A rate limit was reached; wait for retry-after seconds',
  500: 'An error on the server side; data.code identifies it for support',
};

/** Plain JSON of a TypeBox schema (drops TypeBox's symbol keys). */
export function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema));
}

/** Replaces every shape marked as a component by a `$ref`, collecting the shape in `components`. */
function hoist(node: unknown, components: Record<string, unknown>): unknown {
  if (Array.isArray(node)) return node.map((n) => hoist(n, components));
  if (!node || typeof node !== 'object') return node;
  const { [COMPONENT]: name, ...rest } = node as Record<string, unknown>;
  const body = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, hoist(v, components)]));
  if (typeof name !== 'string') return body;
  components[name] ??= body;
  return { $ref: `#/components/schemas/${name}` };
}

function parameters(schema: TSchema | undefined, where: 'path' | 'query') {
  if (!schema) return [];
  const s = plain(schema) as { properties?: Record<string, any>; required?: string[] };
  return Object.entries(s.properties ?? {}).map(([name, sch]) => ({
    name,
    in: where,
    required: where === 'path' || (s.required ?? []).includes(name),
    schema: sch,
  }));
}

export function buildOpenApi(ops: Operation[], serverUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of ops) {
    const c = op.contract;
    const responses: Record<string, unknown> = {};
    const successContent = c.response ? { content: { 'application/json': { schema: plain(c.response) } } } : {};
    responses[String(c.success)] = {
      description: c.success === 204 ? 'Done; no content' : c.success === 101 ? 'Switched to the WebSocket protocol' : 'Success',
      ...successContent,
    };
    const errors = new Set(c.errors);
    errors.add(400);
    if (!c.public) errors.add(401);
    // Any key-authenticated operation answers 403 while its company is suspended.
    if (op.auth !== 'none') errors.add(403);
    errors.add(429);
    errors.add(500);
    // A resource id named in the body or query that the key cannot see answers like a path id.
    if (op.references?.length) errors.add(404);
    // Every write's body is parsed (size, media type) before validation, with or without a declared body.
    if (isWrite(c.method)) {
      errors.add(413);
      errors.add(415);
    }
    for (const code of [...errors].sort()) {
      // Without a listed 400, a schema mismatch carries data.issues; other 400s (malformed JSON,
      // Idempotency-Key) keep the plain error body.
      const schema = code === 400 && !c.errors.includes(400) ? Type.Union([ValidationErrorBody, ErrorBody]) : ErrorBody;
      responses[String(code)] = { description: ERROR_TEXT[code] ?? 'Error', content: { 'application/json': { schema: plain(schema) } } };
    }
    const operation: Record<string, unknown> = {
      operationId: c.operationId,
      summary: c.summary,
      tags: [...c.tags],
      parameters: [...parameters(c.params, 'path'), ...parameters(c.querystring, 'query')],
      responses,
    };
    if (c.body) operation.requestBody = { required: !!c.bodyRequired, content: { 'application/json': { schema: plain(c.body) } } };
    if (c.decided) operation['x-decided'] = true;
    if (c.public || op.auth === 'none') operation.security = [];
    if (op.permission) operation['x-permission'] = op.permission;
    operation['x-rate-tier'] = op.tier;
    (paths[c.path] ??= {})[c.method.toLowerCase()] = operation;
  }
  const doc = {
    openapi: '3.1.0',
    info: {
      title: 'Slipway — Hosting Platform API v3',
      version: '1.0.0',
      description:
        'Slipway implements the Hosting Platform REST API v3. Authenticate with `Authorization: Bearer <API key>`. Errors share one body: `{message, status, data?}`.',
    },
    servers: [{ url: serverUrl }],
    security: [{ bearerAuth: [] }],
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key of the company, sent as a bearer token.' } },
    },
    paths,
  };
  const schemas: Record<string, unknown> = {};
  const hoisted = hoist(paths, schemas) as typeof paths;
  return { ...doc, paths: hoisted, components: { ...doc.components, schemas } };
}
