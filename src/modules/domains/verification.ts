// How a custom domain gets verified: two checks in order, `verification` (the ownership TXT
// record) then `pointing` (the CNAME, or the A record of an apex name). The simulated runtime
// decides them (progression `domain_verification`: immediate, duration, reads = refreshes; fault
// rules fail a phase, which times the domain out); with SLIPWAY_DOMAINS_DNS=real, DNS lookups do.
import { Resolver } from 'node:dns/promises';
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { domainSettings, type DomainSettings } from './settings.js';
import type { DomainsTable } from './storage.js';

export const OPERATION = 'domain_verification';
export const PHASES = ['verification', 'pointing'] as const;
export const TXT_PREFIX = '_slipway-challenge';

export interface DnsRecord {
  type: 'TXT' | 'CNAME' | 'A';
  name: string;
  value: string;
}

const baseOf = (hostname: string) => (hostname.startsWith('*.') ? hostname.slice(2) : hostname);

/** The records the user creates at their DNS provider: ownership TXT, then CNAME (or A for an apex name). */
export function dnsRecords(d: Pick<DomainsTable, 'type' | 'hostname' | 'verification_token' | 'is_wildcard'>, s: DomainSettings): DnsRecord[] | null {
  if (d.type !== 'CUSTOM') return null;
  const base = baseOf(d.hostname);
  const apex = !d.is_wildcard && base.split('.').length === 2;
  return [
    { type: 'TXT', name: `${TXT_PREFIX}.${base}`, value: `slipway-verification=${d.verification_token}` },
    apex ? { type: 'A', name: base, value: s.edgeIpv4 } : { type: 'CNAME', name: d.hostname, value: s.cnameTarget },
  ];
}

export type Check = { state: 'running'; problem?: string } | { state: 'done' } | { state: 'failed'; reason: string };

/** Runs check `phase` (0 verification, 1 pointing) of a custom domain. */
export async function checkPhase(app: AppContext, tx: Tx, d: DomainsTable, phase: 0 | 1): Promise<Check> {
  const s = domainSettings(app.config);
  if (s.dns === 'real') return realCheck(s, d, phase);
  const r = await app.simulated.advance(tx, {
    operation: OPERATION,
    phase: PHASES[phase],
    phaseIndex: phase,
    phaseCount: PHASES.length,
    targetId: d.id,
    startedAt: d.phase_started_at ?? d.created_at,
    reads: d.reads,
    details: { hostname: d.hostname },
  });
  if (r.state === 'running') return { state: 'running' };
  return r.state === 'failed' ? { state: 'failed', reason: r.reason } : { state: 'done' };
}

const clean = (name: string) => name.toLowerCase().replace(/\.$/, '');

async function realCheck(s: DomainSettings, d: DomainsTable, phase: 0 | 1): Promise<Check> {
  const resolver = new Resolver({ timeout: 3000, tries: 1 });
  if (s.dnsServers.length) resolver.setServers(s.dnsServers);
  const [want, other] = dnsRecords(d, s)!;
  let found: boolean;
  let problem: string;
  if (phase === 0) {
    const txt = await resolver.resolveTxt(want!.name).catch(() => [] as string[][]);
    found = txt.some((chunks) => chunks.join('') === want!.value);
    problem = `TXT record ${want!.name} with value ${want!.value} not found`;
  } else {
    // A wildcard is probed through a name it covers.
    const probe = d.is_wildcard ? `slipway-probe.${baseOf(d.hostname)}` : d.hostname;
    const cname = await resolver.resolveCname(probe).catch(() => [] as string[]);
    found = cname.some((c) => clean(c) === s.cnameTarget);
    if (!found) found = (await resolver.resolve4(probe).catch(() => [] as string[])).includes(s.edgeIpv4);
    problem = `${other!.type} record ${other!.name} pointing to ${other!.value} not found`;
  }
  if (found) return { state: 'done' };
  const since = Date.parse(d.phase_started_at ?? d.created_at);
  if (Date.now() - since > s.timeoutMs) return { state: 'failed', reason: `${problem} within ${Math.round(s.timeoutMs / 3600_000)} hours` };
  return { state: 'running', problem };
}
