// Address validation shared by IP restrictions (applications, databases).
import { isIP } from 'node:net';
import { badRequest } from './errors.js';

/** A single IPv4/IPv6 address or a CIDR range of one. */
export function isIpOrCidr(entry: string): boolean {
  const [addr, prefix, ...rest] = entry.split('/');
  if (rest.length || !addr) return false;
  const family = isIP(addr);
  if (!family) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

/** The entries of an IP restriction, trimmed and without repeats; 400 naming the invalid ones. */
export function ipList(entries: string[]): string[] {
  const bad = entries.filter((e) => !isIpOrCidr(e.trim()));
  if (bad.length) throw badRequest(`Invalid IP address or CIDR range: ${bad.slice(0, 5).join(', ')}`);
  return [...new Set(entries.map((e) => e.trim()))];
}
