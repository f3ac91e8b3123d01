import { createHash, randomUUID } from 'node:crypto';

export const newId = (): string => randomUUID();

const NAMESPACE = Buffer.from('6f1d0c2e8a4b4c7e9d3f5a1b2c3d4e5f', 'hex');

/** A name-based (version 5 layout) UUID: stable across installs, for seeded reference data. */
export function stableUuid(name: string): string {
  const h = createHash('sha1').update(NAMESPACE).update(name).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A URL-safe slug used to derive unique `name`s from display names. */
export function slugify(s: string, max = 40): string {
  const slug = s
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, max)
    .replace(/-+$/g, '');
  return slug || 'service';
}
