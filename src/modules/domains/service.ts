// Domains of applications, static sites and load balancers (one set of rules for all three), and
// the installation-wide hostname registry that object storage's CDN domain also uses. The queries
// are storage.ts's.
//
// Rules:
// - every service has one system domain (`<name>-<hex>.<region>.slipway.app` for applications,
//   `.slipway.page` for static sites, `.lb.slipway.app` for load balancers): provisioned when the
//   application is created (signal) or lazily on the first domain call; it can be renamed (PATCH)
//   and switched off (toggle), never deleted;
// - a custom domain starts in VERIFICATION with the DNS records to create; refresh-status runs
//   the checks (verification.ts); ACTIVE means verified and certificate issued;
// - a hostname is held by at most one service in the whole installation (registry.ts); the 400
//   for a held one never names the holder;
// - exactly one primary per service (unique partial index); only an ACTIVE custom domain or the
//   enabled system domain can be primary; deleting the primary promotes the oldest other ACTIVE
//   custom domain, else the system domain (switched back on if it was off).
//
// Public functions for other modules: domainsOf, claimHostname, releaseHostname, and registry.ts's
// registerService, registerExisting, removeServiceDomains.
import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import type { AppContext, CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { servingChanged } from '../../shared/edge/index.js';
import type { Page } from '../../shared/pagination.js';
import type { ServiceSummary } from '../../shared/services.js';
import { MAX_HOSTNAME, parseHostname, parseLabel } from './hostnames.js';
import { domainSettings, type DomainSettings } from './settings.js';
import {
  claimantRow,
  claimedRows,
  clearPrimary,
  countCustomDomains,
  deleteClaim,
  deleteDomainRow,
  findDomainById,
  findListedDomain,
  holderOf,
  hostnameHeld,
  insertIfFree,
  listDomainsPage,
  lockHostname,
  lockService,
  oldestActiveCustom,
  pendingDomains,
  renameDomain,
  serviceDomains,
  setDomainEnabled,
  setPrimaryDomain,
  systemDomainPrimary,
  updateVerification,
  type DomainsTable,
  type OwnerType,
} from './storage.js';
import { checkPhase, dnsRecords, OPERATION, PHASES } from './verification.js';
import { baseRow, inTx, previewHolder, provisionSystemDomain, reservedSuffixes, taken, type ServiceType } from './registry.js';

/** A service type whose domains the API manages, and how its messages name it. */
export interface Owner {
  type: ServiceType;
  label: string;
}

export const OWNERS = {
  app: { type: 'app', label: 'Application' },
  'static-site': { type: 'static-site', label: 'Static site' },
  'load-balancer': { type: 'load-balancer', label: 'Load balancer' },
} as const satisfies Record<Owner['type'], Owner>;

const bool = (n: number) => n === 1;
const now = () => new Date().toISOString();

export function domainView(d: DomainsTable, s: DomainSettings) {
  return {
    id: d.id,
    name: d.hostname,
    status: d.status,
    type: d.type,
    is_enabled: bool(d.is_enabled),
    is_wildcard: bool(d.is_wildcard),
    is_primary: bool(d.is_primary),
    dns_records: dnsRecords(d, s),
    errors: d.errors ? (JSON.parse(d.errors) as { type: string; message: string }[]) : null,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

const view = (app: AppContext, d: DomainsTable) => domainView(d, domainSettings(app.config));

async function findOwner(ctx: CallContext, owner: Owner, id: string): Promise<ServiceSummary> {
  const s = await ctx.app.services.get(owner.type)?.find(ctx, id);
  if (!s) throw notFound(owner.label);
  return s;
}

async function findDomain({ tx, companyId }: CallContext, serviceId: string, domainId: string): Promise<DomainsTable> {
  const d = await findListedDomain(tx, companyId, serviceId, domainId);
  if (!d) throw notFound('Domain');
  return d;
}

/** What the edge needs to route a service's traffic: its hostnames and their state. */
export async function domainsOf(tx: Tx, serviceId: string) {
  const rows = await serviceDomains(tx, serviceId);
  return rows.map((d) => ({
    hostname: d.hostname,
    type: d.type,
    status: d.status,
    is_enabled: bool(d.is_enabled),
    is_primary: bool(d.is_primary),
    is_wildcard: bool(d.is_wildcard),
    certificate: d.certificate,
    serving: bool(d.is_enabled) && d.status === 'ACTIVE',
  }));
}

/**
 * Claims `hostname` for a service that is not managed through the domain operations (object
 * storage's CDN domain): validated and normalized like a custom domain, held uniquely across the
 * installation. Claiming a hostname the same service already holds is a no-op; one held by
 * anything else is a 400 that does not name the holder. Returns the normalized hostname.
 */
export async function claimHostname(ctx: CallContext, hostname: string, owner: { type: OwnerType; id: string }): Promise<string> {
  const { tx, companyId } = ctx;
  const h = parseHostname(hostname).hostname;
  const row = { ...baseRow(companyId, owner.id, owner.type, h), type: 'CDN' as const };
  if (await insertIfFree(tx, row)) return h;
  const held = await holderOf(tx, h);
  if (held?.service_id === owner.id && held.company_id === companyId) return h;
  throw await taken(tx, companyId, h);
}

/** The hostnames services claimed with claimHostname, by service id (one query for a page of services). */
export async function claimedHostnamesOf(tx: Tx, serviceIds: readonly string[]): Promise<Map<string, string>> {
  if (!serviceIds.length) return new Map();
  const rows = await claimedRows(tx, serviceIds);
  return new Map(rows.map((r) => [r.service_id, r.hostname]));
}

/** The hostname a service claimed with claimHostname, if any. */
export async function claimedHostnameOf(tx: Tx, serviceId: string): Promise<string | null> {
  return (await claimedHostnamesOf(tx, [serviceId])).get(serviceId) ?? null;
}

/** The service that claimed `hostname` with claimHostname, if any. */
export async function claimantOf(tx: Tx, hostname: string): Promise<string | null> {
  return (await claimantRow(tx, hostname.toLowerCase())) ?? null;
}

/** Gives up a hostname claimed with claimHostname by this service (no-op when it holds none). */
export async function releaseHostname(ctx: CallContext, hostname: string, ownerId: string): Promise<void> {
  await deleteClaim(ctx.tx, ctx.companyId, ownerId, hostname.toLowerCase());
}

// --- Verification --------------------------------------------------------------------------------

/**
 * Runs the pending checks of a custom domain and stores the outcome with a conditional update
 * (a concurrent check of the same state changes nothing twice). `refresh` counts one refresh
 * (reads progression), restarting the checks when the domain had timed out.
 */
async function advance(app: AppContext, tx: Tx, d: DomainsTable, refresh: boolean): Promise<DomainsTable> {
  if (d.type !== 'CUSTOM' || d.status === 'ACTIVE') return d;
  let cur: DomainsTable = refresh
    ? d.status === 'TIMED_OUT'
      ? { ...d, status: 'VERIFICATION', phase_started_at: now(), reads: 1, errors: null, updated_at: now() }
      : { ...d, reads: d.reads + 1 }
    : d;
  for (;;) {
    if (cur.status !== 'VERIFICATION' && cur.status !== 'POINTING') break;
    const phase = cur.status === 'VERIFICATION' ? 0 : 1;
    const r = await checkPhase(app, tx, cur, phase);
    if (r.state === 'running') {
      cur = { ...cur, errors: r.problem ? JSON.stringify([{ type: PHASES[phase], message: r.problem }]) : null };
      break;
    }
    const t = now();
    if (r.state === 'failed') {
      cur = { ...cur, status: 'TIMED_OUT', errors: JSON.stringify([{ type: PHASES[phase], message: r.reason }]), updated_at: t };
      break;
    }
    const next = phase === 0 ? 'POINTING' : 'ACTIVE';
    cur = {
      ...cur,
      status: next,
      phase_started_at: await nextPhaseStart(app, tx, cur),
      reads: 0,
      errors: null,
      updated_at: t,
      certificate: next === 'ACTIVE' && cur.certificate !== 'custom' ? 'issued' : cur.certificate,
    };
  }
  if (cur.status === d.status && cur.reads === d.reads && cur.errors === d.errors && cur.phase_started_at === d.phase_started_at) return d;
  if (cur.status === 'ACTIVE') servingChanged(app, tx);
  if (await updateVerification(tx, cur, d)) return cur;
  return (await findDomainById(tx, cur.id)) ?? d;
}

/**
 * When the next check starts: in simulated `duration` progression, when the previous one was due
 * to finish (a read long after still shows the state the clock implies); otherwise now.
 */
async function nextPhaseStart(app: AppContext, tx: Tx, d: DomainsTable): Promise<string> {
  const p = domainSettings(app.config).dns === 'simulated' ? await app.simulation.progression(OPERATION, tx) : null;
  if (p?.mode !== 'duration') return now();
  const due = Date.parse(d.phase_started_at ?? d.created_at) + p.ms / PHASES.length;
  return new Date(Math.min(due, Date.now())).toISOString();
}

/**
 * Reads (and set-primary, which depends on the status) let time-based progression show: pending
 * checks of the service's custom domains run (simulated runtime; not in `reads` progression,
 * where only refreshes count).
 */
async function settle(ctx: CallContext, serviceId: string, domainId?: string): Promise<void> {
  const { app } = ctx;
  if (domainSettings(app.config).dns !== 'simulated') return;
  const pending = await pendingDomains(ctx.tx, serviceId, domainId);
  if (!pending.length || (await app.simulation.progression(OPERATION, ctx.tx)).mode === 'reads') return;
  await inTx(ctx, async ({ tx }) => {
    for (const d of pending) await advance(app, tx, d, false);
  });
}

function statusMessage(d: DomainsTable): string {
  const errors = d.errors ? (JSON.parse(d.errors) as { message: string }[]).map((e) => e.message).join('; ') : '';
  switch (d.status) {
    case 'ACTIVE':
      return `Domain ${d.hostname} is active; ${d.certificate === 'custom' ? 'it uses your certificate' : 'its certificate is issued'}`;
    case 'POINTING':
      return `Ownership of ${d.hostname} is verified; waiting for its ${d.is_wildcard || d.hostname.split('.').length > 2 ? 'CNAME' : 'A'} record${errors ? ` (${errors})` : ''}`;
    case 'TIMED_OUT':
      return `Verification of ${d.hostname} timed out${errors ? `: ${errors}` : ''}; refresh the status to check again`;
    default:
      return `Domain status refresh initiated; waiting for the ownership TXT record of ${d.hostname}${errors ? ` (${errors})` : ''}`;
  }
}

// --- Operations ----------------------------------------------------------------------------------

export async function listDomains(ctx: CallContext, owner: Owner, serviceId: string, page: Page) {
  const s = await findOwner(ctx, owner, serviceId);
  await provisionSystemDomain(ctx, owner.type, s);
  await settle(ctx, s.id);
  const res = await listDomainsPage(ctx.tx, ctx.companyId, s.id, page);
  return { ...res, data: res.data.map((d) => view(ctx.app, d)) };
}

export async function getDomain(ctx: CallContext, owner: Owner, serviceId: string, domainId: string) {
  const s = await findOwner(ctx, owner, serviceId);
  await provisionSystemDomain(ctx, owner.type, s);
  await findDomain(ctx, s.id, domainId);
  await settle(ctx, s.id, domainId);
  return view(ctx.app, await findDomain(ctx, s.id, domainId));
}

/** Checks a user's certificate and key: PEM, matching each other, covering the hostname, not expired. */
function checkCertificate(hostname: string, base: string, cert: string | undefined, key: string | undefined) {
  if (cert === undefined && key === undefined) return;
  if (cert === undefined || key === undefined) throw badRequest('custom_ssl_cert and custom_ssl_key must be given together');
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    throw badRequest('custom_ssl_cert is not a PEM certificate');
  }
  let k;
  try {
    k = createPrivateKey(key);
  } catch {
    throw badRequest('custom_ssl_key is not a PEM private key');
  }
  if (!x509.checkPrivateKey(k)) throw badRequest('custom_ssl_key does not belong to custom_ssl_cert');
  const probe = hostname.startsWith('*.') ? `slipway-probe.${base}` : hostname;
  if (!x509.checkHost(probe)) throw badRequest(`custom_ssl_cert does not cover ${hostname}`);
  if (Date.parse(x509.validTo) <= Date.now()) throw badRequest(`custom_ssl_cert expired on ${new Date(x509.validTo).toISOString()}`);
}

export async function addDomain(
  ctx: CallContext,
  owner: Owner,
  serviceId: string,
  input: { domain_name: string; is_wildcard?: boolean; custom_ssl_cert?: string; custom_ssl_key?: string },
) {
  const { tx, app, companyId } = ctx;
  const s = await findOwner(ctx, owner, serviceId);
  const h = parseHostname(input.domain_name, { wildcard: input.is_wildcard === true, reserved: reservedSuffixes(app) });
  checkCertificate(h.hostname, h.base, input.custom_ssl_cert, input.custom_ssl_key);
  await lockService(tx, s.id);
  await provisionSystemDomain(ctx, owner.type, s);
  const max = domainSettings(app.config).maxPerService;
  if ((await countCustomDomains(tx, s.id)) >= max) throw badRequest(`A service can have at most ${max} custom domains; delete one before adding another`);
  const custom = input.custom_ssl_cert !== undefined;
  const row: DomainsTable = {
    ...baseRow(companyId, s.id, owner.type, h.hostname),
    type: 'CUSTOM',
    status: 'VERIFICATION',
    is_wildcard: h.wildcard ? 1 : 0,
    verification_token: randomBytes(16).toString('hex'),
    phase_started_at: now(),
    certificate: custom ? 'custom' : 'pending',
    custom_cert: custom ? input.custom_ssl_cert! : null,
    custom_key_enc: custom ? app.secrets.encrypt(input.custom_ssl_key!) : null,
  };
  // A preview name of another company's hostname would route to that company's previews.
  const previewOf = await previewHolder(tx, h.hostname);
  if (previewOf && previewOf !== companyId) throw badRequest(`The domain ${h.hostname} is not available: it is already in use`);
  if (!(await insertIfFree(tx, row))) throw await taken(tx, companyId, h.hostname);
  servingChanged(app, tx);
  return view(app, row);
}

/** PATCH: renames the system domain's subdomain (custom domains are replaced by add + delete). */
export async function updateDomain(ctx: CallContext, owner: Owner, serviceId: string, domainId: string, input: { name: string }) {
  const { tx, app, companyId } = ctx;
  const s = await findOwner(ctx, owner, serviceId);
  await lockService(tx, s.id);
  const d = await findDomain(ctx, s.id, domainId);
  if (d.type !== 'SYSTEM') throw badRequest('Only the system domain can be renamed; to change a custom domain, add the new name and delete the old one');
  const label = parseLabel(input.name);
  const hostname = `${label}.${d.hostname.slice(d.hostname.indexOf('.') + 1)}`;
  if (hostname === d.hostname) return view(app, d);
  if (hostname.length > MAX_HOSTNAME) throw badRequest(`The domain ${hostname} is longer than ${MAX_HOSTNAME} characters`);
  await lockHostname(tx, hostname);
  if (await hostnameHeld(tx, hostname)) throw await taken(tx, companyId, hostname);
  const updated = { ...d, hostname, updated_at: now() };
  await renameDomain(tx, d.id, hostname, updated.updated_at);
  servingChanged(app, tx);
  return view(app, updated);
}

/** The oldest ACTIVE custom domain becomes primary, else the system domain (switched on). */
async function promoteNext(tx: Tx, serviceId: string): Promise<void> {
  const next = await oldestActiveCustom(tx, serviceId);
  if (next) await setPrimaryDomain(tx, next, now());
  else await systemDomainPrimary(tx, serviceId, now());
}

export async function deleteDomain(ctx: CallContext, owner: Owner, serviceId: string, domainId: string) {
  const { tx } = ctx;
  const s = await findOwner(ctx, owner, serviceId);
  await lockService(tx, s.id);
  const d = await findDomain(ctx, s.id, domainId);
  if (d.type === 'SYSTEM') throw badRequest('The system domain cannot be deleted; use the toggle operation to disable it');
  await deleteDomainRow(tx, d.id);
  if (d.is_primary) await promoteNext(tx, s.id);
  servingChanged(ctx.app, tx);
  return { message: 'Domain deleted' };
}

export async function refreshDomain(ctx: CallContext, owner: Owner, serviceId: string, domainId: string) {
  const { tx, app } = ctx;
  const s = await findOwner(ctx, owner, serviceId);
  const d = await findDomain(ctx, s.id, domainId);
  if (d.type === 'SYSTEM') return { message: `System domain ${d.hostname} is ${d.is_enabled ? 'active' : 'disabled'}; it needs no verification` };
  return { message: statusMessage(await advance(app, tx, d, true)) };
}

export async function setPrimary(ctx: CallContext, owner: Owner, serviceId: string, domainId: string) {
  const { tx } = ctx;
  const s = await findOwner(ctx, owner, serviceId);
  await lockService(tx, s.id);
  await findDomain(ctx, s.id, domainId);
  await settle(ctx, s.id, domainId);
  const d = await findDomain(ctx, s.id, domainId);
  if (d.is_primary) return { message: `${d.hostname} is already the primary domain` };
  if (d.type === 'CUSTOM' && d.status !== 'ACTIVE')
    throw badRequest(`Only an active domain can be primary; ${d.hostname} is ${d.status} (create its DNS records and refresh its status)`);
  if (!d.is_enabled) throw badRequest('The system domain is disabled; enable it (toggle) before making it primary');
  const t = now();
  await clearPrimary(tx, s.id, t);
  await setPrimaryDomain(tx, d.id, t);
  return { message: `${d.hostname} is now the primary domain` };
}

export async function toggleSystemDomain(ctx: CallContext, owner: Owner, serviceId: string, domainId: string) {
  const { tx } = ctx;
  const s = await findOwner(ctx, owner, serviceId);
  await lockService(tx, s.id);
  const d = await findDomain(ctx, s.id, domainId);
  if (d.type !== 'SYSTEM') throw badRequest('Only the system domain can be toggled; delete a custom domain to stop serving it');
  if (d.is_enabled && d.is_primary) throw badRequest('The system domain is the primary domain; make an active custom domain primary before disabling it');
  const enabled = d.is_enabled ? 0 : 1;
  await setDomainEnabled(tx, d.id, enabled, now());
  servingChanged(ctx.app, tx);
  return { message: enabled ? 'System domain enabled' : 'System domain disabled' };
}
