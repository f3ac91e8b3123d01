// API key tokens: 32 random bytes shown once, stored only as a SHA-256 hash and compared in
// constant time.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

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
