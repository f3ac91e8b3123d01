// An operation is declared once, as data: its contract (method, path, schemas, status codes),
// the permission it needs, its rate tier and its handler. That declaration drives routing,
// validation, serialization, RBAC, rate limiting and the served OpenAPI document.
import type { Static, TSchema } from '@sinclair/typebox';
import type { WebSocket } from 'ws';
import type { AuthContext } from '../auth/authenticate.js';
import type { Permission } from '../auth/rbac.js';
import type { CallContext } from '../context.js';
import type { Tier } from '../ratelimit.js';
import type { Reference } from './references.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Contract {
  operationId: string;
  method: Method;
  path: string;
  summary: string;
  tags: readonly string[];
  /** The contract lists no security requirement (e.g. device codes). */
  public?: boolean;
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  bodyRequired?: boolean;
  success: number;
  response?: TSchema;
  errors: readonly number[];
  /** An operation the contract does not define and this project added: served with `x-decided: true`. */
  decided?: boolean;
}

type S<T> = T extends TSchema ? Static<T> : undefined;

/**
 * What a handler receives: the call context that service functions take (application context,
 * transaction, company, actor, scope) plus the request's validated parts.
 */
export interface RequestContext<C extends Contract> extends CallContext {
  params: S<C['params']>;
  query: S<C['querystring']>;
  body: S<C['body']>;
  /** Present on every operation that requires a key. */
  auth: AuthContext;
  ip: string;
  requestId: string;
  headers: Record<string, string | string[] | undefined>;
}

export type Authentication = 'key' | 'none';

export interface Operation<C extends Contract = Contract> {
  contract: C;
  /** `key` (default): a valid API key is required; `none`: anonymous, counted per client IP. */
  auth?: Authentication;
  /** The permission the key needs; null means any valid key of the company. */
  permission: Permission | null;
  tier: Tier;
  /** Path parameter naming the resource (scoped capabilities, per-service counters). Default `id` when present. */
  resourceParam?: string | null;
  /**
   * The operation acts on the company as a whole (e.g. company-wide variables): a permission
   * granted only for some resources does not cover it (403).
   */
  companyWide?: boolean;
  /**
   * Resource ids the request names in its body or query: each is checked like a path id (the
   * key's permission on that resource, existence in the company; 404 otherwise) before the handler.
   */
  references?: readonly Reference[];
  /**
   * The handler changes the database with one statement, atomic on its own (at most one that
   * changes anything, e.g. an insert that tries another name when its name is taken), and emits
   * no event: on PostgreSQL, a request without an Idempotency-Key runs it outside a transaction
   * (one round trip: a transaction would add its BEGIN and COMMIT, the COMMIT a round trip of its
   * own). With an Idempotency-Key, and on SQLite (where transactions are committed in groups), it
   * runs in a transaction as every write does.
   */
  singleWrite?: boolean;
  /**
   * A read that changes nothing (no write, job or event, in any simulation mode): while its
   * bucket has room (RateLimiter.roomFor), it runs while the request is counted instead of after,
   * one round trip less in its latency on a shared counter store. The count still decides: over the
   * limit the answer is 429 (and that 429 wins over any other error of the request), and every
   * answer carries the count's headers. Checked in tests (shared/purity.ts).
   */
  pure?: boolean;
  handler(ctx: RequestContext<C>): Promise<C['response'] extends TSchema ? Static<C['response']> : void>;
  /**
   * `websocket`: the operation is a WebSocket endpoint. Authentication, rate limit, permission,
   * validation, scope and then `handler` (the checks that answer 404 and the like) all run before
   * the upgrade, as plain HTTP; a request without an upgrade is then answered 426; an upgraded
   * connection is handed to `websocket`. The contract's success status is 101.
   */
  upgrade?: 'websocket';
  websocket?(socket: WebSocket, ctx: RequestContext<C>): Promise<void>;
}

export function defineOperation<C extends Contract>(op: Operation<C>): Operation<Contract> {
  return op as unknown as Operation<Contract>;
}

export const isWrite = (m: Method) => m !== 'GET';
