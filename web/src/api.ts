// The typed client of Slipway's v3 API (types generated from the served OpenAPI document into
// schema.d.ts by `npm run web:types`). The API key lives in sessionStorage only: it is sent as a
// bearer header, never put in a URL, and gone when the browser session ends.
import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

const KEY = 'slipway.apiKey';
const OPERATOR_KEY = 'slipway.operatorToken';

export const session = {
  token: () => sessionStorage.getItem(KEY),
  setToken: (t: string | null) => (t ? sessionStorage.setItem(KEY, t) : sessionStorage.removeItem(KEY)),
  operatorToken: () => sessionStorage.getItem(OPERATOR_KEY),
  setOperatorToken: (t: string | null) => (t ? sessionStorage.setItem(OPERATOR_KEY, t) : sessionStorage.removeItem(OPERATOR_KEY)),
};

export const api = createClient<paths>({ baseUrl: `${location.origin}/v3` });
api.use({
  onRequest({ request }) {
    const t = session.token();
    if (t && !request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${t}`);
    return request;
  },
});

/** An API answer that is not a success: its status and the contract's error message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Unwraps an openapi-fetch result: the data, or an ApiError with the server's message. */
export async function call<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await p;
  if (!response.ok) {
    const message = (error as { message?: string } | undefined)?.message ?? response.statusText;
    throw new ApiError(response.status, message);
  }
  return data as T;
}

/** Calls the operator surface (/_admin, outside the v3 document) with the operator token. */
export async function admin<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`/_admin${path}`, {
    method,
    headers: {
      authorization: `Bearer ${session.operatorToken() ?? ''}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = text ? JSON.parse(text) : undefined;
  if (!res.ok) throw new ApiError(res.status, json?.message ?? res.statusText);
  return json as T;
}

/**
 * Calls an operation by its resolved path (`/static-sites/<id>/env-vars`) when a view serves
 * several kinds whose operations share a shape; the typed client is used everywhere else.
 */
export const untyped = {
  get: <T = any>(path: string, query?: Record<string, unknown>) => call<T>((api.GET as any)(path, { params: { query } })),
  post: <T = any>(path: string, body?: unknown) => call<T>((api.POST as any)(path, body === undefined ? {} : { body })),
  patch: <T = any>(path: string, body: unknown) => call<T>((api.PATCH as any)(path, { body })),
  put: <T = any>(path: string, body: unknown) => call<T>((api.PUT as any)(path, { body })),
  delete: <T = any>(path: string) => call<T>((api.DELETE as any)(path, {})),
};
