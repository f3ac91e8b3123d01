// The installation's hostname registry: every hostname Slipway serves is a row of `domains`,
// recorded when it is assigned, and the edge routes by that row alone (never by searching names).
//
// Rules:
// - a hostname has exactly one owner in the whole installation (unique index; writers of one
//   hostname serialized by a lock, so a lost race is a 400 or the next candidate, never a 500);
// - row types: SYSTEM (the service's system domain, one per service), CUSTOM (a user's domain,
//   served once ACTIVE), CDN (object storage), ALIAS (further names the system assigned: the
//   short name `<name>.<base domain>` and a static site's own hostname; never listed by the API);
// - a short name is first come, first served across companies and service kinds: a service whose
//   short name is taken simply has none;
// - users may not add domains under a suffix Slipway hands out names from (`reservedSuffixes`),
//   nor a preview name (`<branch>--<hostname>`) of a hostname another company holds;
// - a static site's preview lanes answer at `<branch>--<hostname>` for every hostname it holds.
// Its queries and locks are storage.ts's.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AppContext, CallContext } from '../../shared/context.js';
import { systemCall } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import type { DB } from '../../shared/db/schema.js';
import { badRequest } from '../../shared/errors.js';
import { servingChanged, type RoutedHost } from '../../shared/edge/index.js';
import { edgeSettings } from '../../shared/edge/settings.js';
import { newId } from '../../shared/ids.js';
import type { ServiceSummary } from '../../shared/services.js';
import { CLUSTER_BY_ID } from '../resources/index.js';
import {
  aliasToSystem,
  companyHolding,
  deleteServiceDomains,
  hasPrimaryDomain,
  hasSystemDomain,
  insertIfFree,
  lockService,
  registeredOf,
  heldCandidateRows,
  routeRows,
  servedRows,
  serviceHolding,
  type DomainsTable,
  type OwnerType,
  type RouteRow,
} from './storage.js';

/** A service type whose domains the API manages. */
export type ServiceType = Exclude<OwnerType, 'object-storage'>;

/** Where simulated system domains live. */
export const SYSTEM_BASE = 'slipway.app';
const SITE_BASE = 'slipway.site';

/**
 * The suffixes under which Slipway hands out system names (every kind's system domains, the edge's
 * base domain, and what service kinds declare, e.g. object storage's virtual-host and CDN
 * domains): nobody may add a custom domain there.
 */
export function reservedSuffixes(app: AppContext): string[] {
  return [...new Set([SYSTEM_BASE, 'slipway.page', SITE_BASE, edgeSettings(app.config).baseDomain, ...app.services.systemSuffixes()])];
}

/** The base domain system names are generated under: the edge's with the local runtime, else the simulated one. */
function systemSuffix(app: AppContext, type: ServiceType, clusterId: string | null | undefined): string {
  if (app.runtimes.edge) return app.runtimes.edge.settings.baseDomain;
  if (type === 'static-site') return SITE_BASE;
  if (type === 'load-balancer') return `lb.${SYSTEM_BASE}`;
  const region = clusterId ? CLUSTER_BY_ID.get(clusterId)?.name : undefined;
  return region ? `${region}.${SYSTEM_BASE}` : SYSTEM_BASE;
}

/** A new system hostname for a service named `name`: `<name>-<6 hex>.<suffix>`. */
export function systemHostname(app: AppContext, type: ServiceType, name: string, clusterId?: string | null): string {
  const slug =
    name
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'service';
  return `${slug}-${randomBytes(3).toString('hex')}.${systemSuffix(app, type, clusterId)}`;
}

const now = () => new Date().toISOString();

export function baseRow(companyId: string, serviceId: string, serviceType: OwnerType, hostname: string): DomainsTable {
  const t = now();
  return {
    id: newId(),
    company_id: companyId,
    service_id: serviceId,
    service_type: serviceType,
    hostname,
    type: 'SYSTEM',
    status: 'ACTIVE',
    is_enabled: 1,
    is_wildcard: 0,
    is_primary: 0,
    verification_token: null,
    phase_started_at: null,
    reads: 0,
    errors: null,
    certificate: 'issued',
    custom_cert: null,
    custom_key_enc: null,
    created_at: t,
    updated_at: t,
  };
}

/** The 400 for a hostname somebody holds: says whether it is the caller's own, never who else holds it. */
export async function taken(tx: Tx, companyId: string, hostname: string) {
  if ((await companyHolding(tx, hostname)) === companyId) return badRequest(`The domain ${hostname} is already in use by a service of your company`);
  return badRequest(`The domain ${hostname} is not available: it is already in use`);
}

/** The company holding the hostname a preview name (`<branch>--<hostname>`) derives from, if any. */
export async function previewHolder(tx: Tx, hostname: string): Promise<string | null> {
  const p = splitPreview(hostname);
  if (!p) return null;
  return (await companyHolding(tx, p.rest)) ?? null;
}

/** Runs `fn` in the call's transaction, or in a new one when the call is a read. */
export function inTx<T>(ctx: CallContext, fn: (ctx: CallContext) => Promise<T>): Promise<T> {
  if (ctx.tx.isTransaction) return fn(ctx);
  return ctx.app.database.db.transaction().execute((tx) => fn({ ...ctx, tx }));
}

/** A service as the registry needs it: its name, region and (when it has one) the system hostname it announced. */
export type Registrant = Pick<ServiceSummary, 'id' | 'name' | 'cluster_id'> & { hostname?: string | null };

/**
 * Gives a service its system domain if it has none (idempotent). `service.hostname` is the one the
 * owner already announced (an application's generated domain, a static site's hostname);
 * otherwise, or when that one is held, one is generated. The system domain becomes primary when
 * the service has no primary yet.
 */
export async function provisionSystemDomain(ctx: CallContext, type: ServiceType, service: Registrant): Promise<void> {
  if (await hasSystemDomain(ctx.tx, service.id)) return;
  await inTx(ctx, async ({ tx, companyId, app }) => {
    await lockService(tx, service.id);
    if (await hasSystemDomain(tx, service.id)) return;
    const is_primary = (await hasPrimaryDomain(tx, service.id)) ? 0 : 1;
    // Announced and already held by the service itself as an alias (registered before it had a system domain).
    if (service.hostname && (await aliasToSystem(tx, service.id, service.hostname, is_primary, now()))) return;
    for (let attempt = 0; attempt < 8; attempt++) {
      const name = attempt === 0 && service.hostname ? service.hostname : systemHostname(app, type, service.name, service.cluster_id);
      if (await insertIfFree(tx, { ...baseRow(companyId, service.id, type, name), is_primary })) return;
    }
    throw new Error(`could not find a free system domain for service ${service.id}`);
  });
}

/** Records `hostname` as a further name of the service if nobody holds it; whether the service now holds it. */
async function claimAlias(tx: Tx, companyId: string, type: ServiceType, serviceId: string, hostname: string): Promise<boolean> {
  if (await insertIfFree(tx, { ...baseRow(companyId, serviceId, type, hostname), type: 'ALIAS' })) return true;
  return (await serviceHolding(tx, hostname)) === serviceId;
}

/** The short name `<name>.<base domain>` of a service, where the edge runs. */
const shortName = (app: AppContext, name: string) => (app.runtimes.edge ? `${name}.${app.runtimes.edge.settings.baseDomain}` : null);

/**
 * Registers a new service's names: its system domain and, where the edge runs, its short name
 * (first come, first served) and the hostname it announced when that is not its system domain.
 */
export async function registerService(ctx: CallContext, type: ServiceType, service: Registrant): Promise<void> {
  await provisionSystemDomain(ctx, type, service);
  await claimNames(ctx.tx, ctx.app, ctx.companyId, type, service, new Set());
  servingChanged(ctx.app, ctx.tx);
}

async function claimNames(tx: Tx, app: AppContext, companyId: string, type: ServiceType, s: Registrant, held: Set<string>): Promise<void> {
  for (const h of [s.hostname, shortName(app, s.name)]) if (h && !held.has(h)) await claimAlias(tx, companyId, type, s.id, h);
}

/**
 * Registers the names of services that existed before the edge ran or before names were recorded
 * (at start, where the edge runs): every service in `services` (oldest first, which decides who
 * gets a short name held by two) gets what `registerService` would have given it. Costs one read
 * per 500 services when nothing is missing.
 */
export async function registerExisting(app: AppContext, type: ServiceType, services: (Registrant & { company_id: string })[]): Promise<void> {
  if (!app.runtimes.edge) return;
  const db = app.database.db;
  for (let i = 0; i < services.length; i += 500) {
    const chunk = services.slice(i, i + 500);
    const names = (s: Registrant) => [s.hostname, shortName(app, s.name)].filter((h): h is string => !!h);
    const rows = await registeredOf(
      db,
      chunk.map((s) => s.id),
      chunk.flatMap(names),
    );
    const held = new Set(rows.map((r) => r.hostname));
    for (const s of chunk) {
      const hasSystem = rows.some((r) => r.service_id === s.id && r.type === 'SYSTEM');
      // A name somebody holds stays theirs (the oldest service got it): only unheld names are claimed.
      if (hasSystem && names(s).every((h) => held.has(h))) continue;
      await db.transaction().execute(async (tx) => {
        const ctx = systemCall(app, tx, s.company_id);
        if (!hasSystem) await provisionSystemDomain(ctx, type, s);
        await claimNames(tx, app, s.company_id, type, s, held);
      });
      for (const h of names(s)) held.add(h);
    }
  }
}

/** Removes every domain of a service (it is being deleted), freeing its hostnames. */
export async function removeServiceDomains(app: AppContext, tx: Tx, serviceId: string): Promise<void> {
  await deleteServiceDomains(tx, serviceId);
  servingChanged(app, tx);
}

// --- Routing -------------------------------------------------------------------------------------

/** Where the edge sends a hostname: a service, and for a static site's preview name, the branch label. */
export interface Route {
  kind: OwnerType;
  id: string;
  preview?: string;
}

function splitPreview(host: string): { preview: string; rest: string } | null {
  const dot = host.indexOf('.');
  const i = host.indexOf('--');
  return i > 0 && (dot < 0 || i < dot) ? { preview: host.slice(0, i), rest: host.slice(i + 2) } : null;
}

/** Every hostname the registry serves with its owner (a proxy's table; preview names and wildcards are routed by `routeOf` alone). */
export async function routedHosts(db: Kysely<DB>): Promise<RoutedHost[]> {
  return (await servedRows(db)).filter(serving).map((r) => ({ hostname: r.hostname, kind: r.service_type, id: r.service_id, companyId: r.company_id }));
}

/**
 * Every hostname the registry records but does not serve (a custom domain not verified or disabled,
 * a disabled system domain, a bucket's CDN name): routeOf answers none for it, even where a wildcard
 * covers it, and so must a proxy.
 */
export async function heldHosts(db: Kysely<DB>): Promise<string[]> {
  return (await heldCandidateRows(db)).filter((r) => !serving(r)).map((r) => r.hostname);
}

/** Whether a registry row is served: an alias, the enabled system domain, or an active, enabled custom domain. */
const serving = (r: RouteRow) => r.type === 'ALIAS' || (r.is_enabled === 1 && (r.type === 'SYSTEM' || (r.type === 'CUSTOM' && r.status === 'ACTIVE')));

/**
 * The owner of a hostname, by the registry alone: the row of the hostname itself (which decides,
 * served or not); else, for `<branch>--<hostname>`, the static site holding `<hostname>`; else an
 * active wildcard custom domain of the parent name.
 */
export async function routeOf(db: Kysely<DB>, host: string): Promise<Route | null> {
  const p = splitPreview(host);
  const dot = host.indexOf('.');
  const wildcard = dot > 0 ? `*.${host.slice(dot + 1)}` : null;
  const names = [host, p?.rest, wildcard].filter((x): x is string => !!x);
  const rows = await routeRows(db, names);
  const find = (h: string | null | undefined) => (h ? rows.find((r) => r.hostname === h) : undefined);
  const exact = find(host);
  if (exact) return serving(exact) ? { kind: exact.service_type, id: exact.service_id } : null;
  const base = find(p?.rest);
  if (p && base && base.service_type === 'static-site' && serving(base)) return { kind: base.service_type, id: base.service_id, preview: p.preview };
  const wild = find(wildcard);
  return wild && serving(wild) ? { kind: wild.service_type, id: wild.service_id } : null;
}
