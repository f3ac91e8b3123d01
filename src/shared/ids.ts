import { createHash, randomFillSync, randomUUID } from 'node:crypto';

/**
 * A new resource id: a version 7 UUID (RFC 9562), its first 48 bits the time in milliseconds and
 * 74 random bits after them. Ids made close in time sort close together, so the rows of one
 * moment's inserts share the pages of every index on `id` (a random id dirties a page of its
 * own in each, each one written to the WAL at commit).
 */
export function newId(): string {
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx: keeps the variant and the last 74 random bits
  const ms = Date.now().toString(16).padStart(12, '0');
  return `${ms.slice(0, 8)}-${ms.slice(8)}-7${random.slice(15)}`;
}

/** Random bytes drawn 4 KiB at a time, not a call into the system's generator per value (ids are made on every write). */
const entropy = Buffer.alloc(4096);
let drawn = entropy.length;

/** `bytes` random bytes as lowercase hex (a simulated commit SHA, a build id); not for secrets, which take their own `randomBytes`. */
export function randomHex(bytes: number): string {
  if (bytes > entropy.length) throw new RangeError(`randomHex draws at most ${entropy.length} bytes`);
  if (drawn + bytes > entropy.length) {
    randomFillSync(entropy);
    drawn = 0;
  }
  drawn += bytes;
  return entropy.toString('hex', drawn - bytes, drawn);
}

const NAMESPACE = Buffer.from('6f1d0c2e8a4b4c7e9d3f5a1b2c3d4e5f', 'hex');

/** A name-based (version 5 layout) UUID: stable across installs, for seeded reference data. */
export function stableUuid(name: string): string {
  const h = createHash('sha1').update(NAMESPACE).update(name).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

/**
 * `n` hex digits of `id` for a name derived from it that must tell it apart from the names of
 * other resources (a bucket, a hostname, a server-side database name): the first ones of an id
 * that is not version 7 (ids were random, version 4, before; their names stay as they were), the
 * last, random ones of a version 7 id, whose first ones are its creation time.
 */
export function idDigits(id: string, n: number): string {
  const hex = id.replace(/-/g, '');
  return id.charAt(14) === '7' ? hex.slice(-n) : hex.slice(0, n);
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
