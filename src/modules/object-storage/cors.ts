// CORS of the data plane: which of a bucket's rules lets an origin use a method (and request
// headers), as S3 evaluates them: the first rule that matches wins.
import type { CorsRule } from './service.js';

/** `*`, an exact value, or a pattern with one `*` wildcard; case-insensitive. */
function matches(pattern: string, value: string): boolean {
  const p = pattern.toLowerCase();
  const v = value.toLowerCase();
  if (p === '*') return true;
  const star = p.indexOf('*');
  if (star < 0) return p === v;
  const head = p.slice(0, star);
  const tail = p.slice(star + 1);
  return v.length >= head.length + tail.length && v.startsWith(head) && v.endsWith(tail);
}

export function findRule(rules: readonly CorsRule[], origin: string, method: string, requestHeaders: readonly string[] = []): CorsRule | undefined {
  return rules.find(
    (r) =>
      r.origins.some((o) => matches(o, origin)) &&
      (r.methods as string[]).includes(method) &&
      requestHeaders.every((h) => (r.headers ?? []).some((a) => matches(a, h))),
  );
}

/** The response headers a matching rule grants `origin`. */
export function corsHeaders(rule: CorsRule, origin: string): Record<string, string> {
  const any = rule.origins.includes('*');
  return {
    'access-control-allow-origin': any ? '*' : origin,
    ...(any ? {} : { 'access-control-allow-credentials': 'true' }),
    'access-control-expose-headers': 'ETag, x-amz-request-id, x-amz-version-id, Content-Length, Content-Range',
    vary: 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method',
  };
}
