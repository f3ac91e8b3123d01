// Operator settings of the domains area (`SLIPWAY_DOMAINS_*` environment variables).
import { isIP } from 'node:net';
import { intSetting, type Config } from '../../shared/config.js';

export interface DomainSettings {
  /** `simulated`: the simulated runtime decides verification; `real`: DNS lookups (node:dns) do. */
  dns: 'simulated' | 'real';
  /** Resolvers for `real` checks (`host` or `host:port`); empty = the system's. */
  dnsServers: string[];
  /** Where a custom subdomain's CNAME must point. */
  cnameTarget: string;
  /** The address an apex domain's A record must hold. */
  edgeIpv4: string;
  /** Custom domains per service. */
  maxPerService: number;
  /** `real` checks give up (TIMED_OUT) when a phase has not passed after this long. */
  timeoutMs: number;
}

const cache = new WeakMap<Config, DomainSettings>();

export function domainSettings(config: Config): DomainSettings {
  const hit = cache.get(config);
  if (hit) return hit;
  const env = config.domains.env;
  const dns = env.SLIPWAY_DOMAINS_DNS || 'simulated';
  if (dns !== 'simulated' && dns !== 'real') throw new Error(`SLIPWAY_DOMAINS_DNS must be "simulated" or "real" (got "${dns}")`);
  const num = (name: string, d: number) => intSetting(env, name, d);
  const edgeIpv4 = env.SLIPWAY_DOMAINS_EDGE_IPV4 || '192.0.2.10';
  if (isIP(edgeIpv4) !== 4) throw new Error(`SLIPWAY_DOMAINS_EDGE_IPV4 must be an IPv4 address (got "${edgeIpv4}")`);
  const s: DomainSettings = {
    dns,
    dnsServers: (env.SLIPWAY_DOMAINS_DNS_SERVERS ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
    cnameTarget: (env.SLIPWAY_DOMAINS_CNAME_TARGET || 'cname.slipway.app').toLowerCase(),
    edgeIpv4,
    maxPerService: num('SLIPWAY_DOMAINS_MAX_PER_SERVICE', 50),
    timeoutMs: num('SLIPWAY_DOMAINS_TIMEOUT_HOURS', 72) * 3600_000,
  };
  cache.set(config, s);
  return s;
}
