// API key tokens: 32 random bytes shown once, stored only as a SHA-256 hash and compared in
// constant time.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ApiError, unauthorized } from '../errors.js';

export function generateToken(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('hex')}`;
}

/** SHA-256 of the token, hex (crypto.hash: one call, no Hash object per request). */
export const hashToken = (token: string): string => hash('sha256', token, 'hex');

export function hashesEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** `svl_ab...wxyz`: the prefix, two characters after it and the last four. */
export function maskToken(token: string): string {
  const sep = token.indexOf('_');
  const head = sep >= 0 && sep < 12 ? token.slice(0, sep + 3) : token.slice(0, 2);
  return `${head}...${token.slice(-4)}`;
}

/**
 * The check of a surface a configured token opens (the operator's /_admin, /metrics): 404 with
 * `disabled` when none of `tokens` is set, 401 unless `authorization` is a bearer of one of them.
 */
export function requireBearer(authorization: string | undefined, tokens: (string | undefined)[], disabled: string): void {
  const set = tokens.filter((t): t is string => !!t);
  if (!set.length) throw new ApiError(404, disabled);
  const m = /^Bearer (.+)$/.exec(authorization ?? '');
  const given = m ? hashToken(m[1]!) : undefined;
  if (!given || !set.some((t) => hashesEqual(given, hashToken(t)))) throw unauthorized('A valid operator token is required');
}
