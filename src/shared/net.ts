// Address validation shared by IP restrictions (applications, databases), and the classification of
// outbound destinations (webhook endpoints, load balancers' external URLs) with ipaddr.js.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';
import ipaddr, { type IPv4, type IPv6 } from 'ipaddr.js';
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

/** An address as ipaddr.js reads it (IPv4-mapped IPv6 as IPv4), or null. */
function parseClient(a: string): IPv4 | IPv6 | null {
  try {
    const ip = ipaddr.parse(a.trim());
    return ip.kind() === 'ipv6' && (ip as IPv6).isIPv4MappedAddress() ? (ip as IPv6).toIPv4Address() : ip;
  } catch {
    return null;
  }
}

/** Whether an address is in a list of addresses and CIDR ranges. */
export function inList(address: string, list: string[]): boolean {
  const ip = parseClient(address);
  if (!ip) return false;
  return list.some((entry) => {
    try {
      if (entry.includes('/')) {
        const [range, bits] = ipaddr.parseCIDR(entry);
        return ip.kind() === range.kind() && ip.match([range, bits]);
      }
      const other = parseClient(entry);
      return !!other && other.kind() === ip.kind() && other.toString() === ip.toString();
    } catch {
      return false;
    }
  });
}

/** A request's client address: the socket's, or (from a trusted proxy) the last X-Forwarded-For entry that is not a trusted proxy. */
export function clientAddress(req: IncomingMessage, trusted: string[]): string {
  let addr = req.socket.remoteAddress ?? '';
  if (!trusted.length || !inList(addr, trusted)) return addr;
  const hops = String(req.headers['x-forwarded-for'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  while (hops.length) {
    addr = hops.pop()!;
    if (!inList(addr, trusted)) return addr;
  }
  return addr;
}

// ---- Outbound destinations (SSRF) ------------------------------------------------------------

/** An address as ipaddr.js reads it, or null when `address` is not an IP literal (brackets allowed). */
function parseIp(address: string): IPv4 | IPv6 | null {
  const a = address.replace(/^\[|\]$/g, '');
  if (!isIP(a.split('%')[0]!)) return null;
  try {
    return ipaddr.parse(a);
  } catch {
    return null;
  }
}

const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
const NAT64_WKP = ipaddr.parseCIDR('64:ff9b::/96');
const AWS_METADATA_V6 = ipaddr.parse('fd00:ec2::254').toNormalizedString();

/**
 * The IPv4 addresses an IPv6 address stands for, or null when it is a plain IPv6 address:
 * IPv4-mapped (::ffff:a.b.c.d), SIIT (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d, so `::7f00:1`),
 * NAT64 (64:ff9b::/96), 6to4 (2002:AABB:CCDD::/48) and Teredo (2001:0:SERVER:..:~CLIENT: the server
 * and the de-obfuscated client). The local-use NAT64 prefix 64:ff9b:1::/48 stands for an unknown
 * (network-specific) mapping: [] (no address may be trusted).
 */
function embeddedIpv4(ip: IPv6): IPv4[] | null {
  const p = ip.parts as [number, number, number, number, number, number, number, number];
  const range = ip.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145') return [v4(p[6], p[7])];
  if (range === 'rfc6052') return ip.match(NAT64_WKP) ? [v4(p[6], p[7])] : [];
  if (range === '6to4') return [v4(p[1], p[2])];
  if (range === 'teredo') return [v4(p[2], p[3]), v4(~p[6] & 0xffff, ~p[7] & 0xffff)];
  // IPv4-compatible: the first 96 bits are zero (:: and ::1 keep their IPv6 meaning).
  if (p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7] > 1)) return [v4(p[6], p[7])];
  return null;
}

/**
 * Why an outbound connection (webhook delivery) to `address` is refused, or null when it may be
 * made. Never: link-local (includes cloud metadata 169.254.169.254, fe80::/10) and the AWS IPv6
 * metadata address. In production mode also every address that is not global unicast by ipaddr.js
 * (loopback, private, shared, unspecified, broadcast, multicast, reserved and documentation ranges,
 * unique-local, ...). An IPv6 address that embeds IPv4 addresses is judged by those.
 */
export function refusedDestination(address: string, production: boolean): string | null {
  const ip = parseIp(address);
  if (!ip) return `"${address}" is not an IP address`;
  const embedded = ip.kind() === 'ipv6' ? embeddedIpv4(ip as IPv6) : null;
  const judged: (IPv4 | IPv6)[] = embedded ?? [ip];
  const via = embedded ? ` (it stands for ${embedded.map(String).join(' and ') || 'a network-specific IPv4 address'})` : '';
  if (judged.some((c) => c.range() === 'linkLocal') || (ip.kind() === 'ipv6' && ip.toNormalizedString() === AWS_METADATA_V6))
    return `${address} is a link-local or cloud-metadata address${via}`;
  if (production && (judged.length === 0 || judged.some((c) => c.range() !== 'unicast'))) return `${address} is a private, loopback or reserved address${via}`;
  return null;
}

/**
 * Why an outbound URL (a webhook endpoint, a load balancer's external destination) is refused, or
 * null: it must be absolute, http(s) (`httpsInProduction`: only https in production mode), without
 * credentials, with a host; an IP literal host is judged by `refusedDestination`, and the cloud
 * metadata host names are refused. Host names are not resolved here (resolved addresses are the
 * connecting side's to check). `label` names the field in the message.
 */
export function outboundUrlProblem(url: string, production: boolean, opts: { label: string; httpsInProduction: boolean }): string | null {
  const { label } = opts;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `${label} must be an absolute URL`;
  }
  const httpsOnly = production && opts.httpsInProduction;
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && !httpsOnly))
    return httpsOnly ? `${label} must use https://` : `${label} must use https:// or http://`;
  if (u.username || u.password) return `${label} must not contain credentials`;
  if (!u.hostname) return `${label} must have a host`;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const why = refusedDestination(host, production);
    if (why) return `${label} not allowed: ${why}`;
  } else if (host === 'metadata.google.internal' || host === 'metadata') return `${label} not allowed: cloud-metadata host`;
  return null;
}

/**
 * A DNS lookup (for http.request / undici `connect.lookup`) that fails with an error of `code` when
 * a host name resolves to an address `refusedDestination` refuses, so the address checked is the
 * address connected to (webhook deliveries, load balancers' external destinations).
 */
export function guardedLookup(production: boolean, code: string) {
  return (hostname: string, options: any, cb: (...args: any[]) => void) => {
    const opts = typeof options === 'object' && options ? options : {};
    dnsLookup(hostname, { family: opts.family ?? 0, hints: opts.hints, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return cb(err);
      for (const a of addresses) {
        const why = refusedDestination(a.address, production);
        if (why) return cb(Object.assign(new Error(`refused to connect: ${hostname} resolves to ${why}`), { code }));
      }
      if (!addresses.length) return cb(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }));
      if (opts.all) return cb(null, addresses);
      cb(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}
