// Address validation shared by IP restrictions (applications, databases).
import { isIP } from 'node:net';

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
