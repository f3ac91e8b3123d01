// Unique, URL-safe `name`s derived from display names (e.g. "My Shop" -> "my-shop", "my-shop-2").
import { randomBytes } from 'node:crypto';
import { slugify } from './ids.js';

export async function uniqueName(displayName: string, taken: (candidate: string) => Promise<boolean>): Promise<string> {
  const base = slugify(displayName);
  if (!(await taken(base))) return base;
  for (let i = 2; i < 20; i++) if (!(await taken(`${base}-${i}`))) return `${base}-${i}`;
  return `${base}-${randomBytes(3).toString('hex')}`;
}
