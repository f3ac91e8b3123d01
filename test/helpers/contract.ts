// Validates every /v3 response a test receives against the schema the server itself publishes
// in /v3/openapi.json for that operation and status code.
import assert from 'node:assert/strict';
import AjvModule from 'ajv';
import formatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';

const Ajv = ((AjvModule as any).default ?? AjvModule) as typeof AjvModule.default;
const addFormats = ((formatsModule as any).default ?? formatsModule) as typeof formatsModule.default;

interface Route {
  method: string;
  re: RegExp;
  static: number;
  op: any;
}

export class ContractChecker {
  private routes?: Route[];
  private ajv = (() => {
    const a = new Ajv({ strict: false, allErrors: true });
    addFormats(a);
    return a;
  })();
  private cache = new Map<string, ValidateFunction>();
  /** The document's named shapes, which the operations' schemas refer to with `$ref`. */
  private components: unknown;
  /** Operation ids whose responses were checked, with the statuses seen. */
  readonly seen = new Map<string, Set<number>>();

  private async load(server: { baseUrl: string }) {
    const doc = await (await fetch(`${server.baseUrl}/v3/openapi.json`)).json();
    this.components = doc.components;
    this.routes = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const re = new RegExp('^/v3' + path.replace(/\{[^}]+\}/g, '[^/]+') + '$');
        this.routes.push({ method: method.toUpperCase(), re, static: path.replace(/\{[^}]+\}/g, '').length, op });
      }
    }
    // Prefer the most specific template (e.g. /api-keys/me over /api-keys/{id}).
    this.routes.sort((a, b) => b.static - a.static);
  }

  async check(server: { baseUrl: string }, method: string, url: string, status: number, body: unknown) {
    if (!this.routes) await this.load(server);
    const path = url.split('?')[0]!;
    const route = this.routes!.find((r) => r.method === method && r.re.test(path));
    if (!route) {
      assert.equal(status, 404, `${method} ${path} is not in the published document but answered ${status}`);
      return;
    }
    const resp = route.op.responses?.[String(status)];
    assert.ok(resp, `${route.op.operationId}: status ${status} is not documented (documented: ${Object.keys(route.op.responses).join(', ')})`);
    (this.seen.get(route.op.operationId) ?? this.seen.set(route.op.operationId, new Set()).get(route.op.operationId)!).add(status);
    const schema = resp.content?.['application/json']?.schema;
    if (!schema) {
      assert.ok(body === undefined || body === '', `${route.op.operationId} ${status}: documented without a body but got one`);
      return;
    }
    const key = `${route.op.operationId}:${status}`;
    let validate = this.cache.get(key);
    // Compiled with the components beside it, so `#/components/schemas/...` references resolve.
    if (!validate) this.cache.set(key, (validate = this.ajv.compile({ allOf: [schema], components: this.components })));
    assert.ok(
      validate(body),
      `${route.op.operationId} ${status}: response does not match the published schema: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
    );
  }
}
