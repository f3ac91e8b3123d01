// Application settings at the edge and network level: maintenance mode, egress IPs, IP
// restriction, CDN and cache purges, simulated access logs, public TCP proxies and private ports.
// Edge settings live in one `application_settings` row per application, created on first change
// (reads answer the defaults until then).
import { servingChanged } from '../../shared/edge/index.js';
import type { CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { ipList } from '../../shared/net.js';
import type { Page } from '../../shared/pagination.js';
import { seeded } from '../../shared/runtime/driver.js';
import { CLUSTER_BY_ID } from '../resources/index.js';
import { trafficOf } from './observability.js';
import { accessLog } from '../../shared/edge/traffic.js';
import { assertMutable } from './service.js';
import { findApp } from './find.js';
import type { ApplicationsTable } from './storage.js';
import {
  deletePrivatePortRow,
  deleteTcpProxyRow,
  findPortRow,
  findSettings,
  insertPrivatePort,
  insertTcpProxy,
  listPrivatePortsPage,
  listTcpProxiesPage,
  lockClusterTcpProxies,
  lockPrivatePorts,
  upsertSettings,
  upsertSettingsFlippingCdn,
  usedExternalPorts,
  type ApplicationSettingsTable,
  type SettingsChanges,
} from './settings-storage.js';

const bool = (n: number) => n === 1;

// --- Edge settings row -------------------------------------------------------------------------

const defaults = (a: ApplicationsTable): ApplicationSettingsTable => ({
  app_id: a.id,
  company_id: a.company_id,
  maintenance_enabled: 0,
  maintenance_page_url: null,
  ip_type: 'deny',
  ip_enabled: 0,
  ip_list: '[]',
  cdn_enabled: 0,
  cache_purged_at: null,
  updated_at: a.created_at,
});

async function settingsOf(tx: Tx, a: ApplicationsTable): Promise<ApplicationSettingsTable> {
  return (await findSettings(tx, a.id)) ?? defaults(a);
}

/**
 * What the edge enforces for an application: maintenance mode and IP restriction; and whether it
 * answers through the edge cache (`cdn`: the settings' last change is part of the cache key, so
 * turning the CDN off and on again starts from an empty cache).
 */
export async function edgeSettings(tx: Tx, a: ApplicationsTable) {
  const s = await settingsOf(tx, a);
  return {
    maintenance: maintenanceView(s),
    ipRestriction: ipView(s),
    cdn: { enabled: bool(s.cdn_enabled), purgedAt: s.cache_purged_at, version: s.updated_at },
  };
}

/**
 * Writes `changes` (inserting the row, from the defaults, on first change) and answers the row as
 * written. An existing row gets only the changed columns (with `flipCdn`, `cdn_enabled` flipped
 * instead), so a change another transaction committed meanwhile to a different setting stays.
 */
async function saveSettings({ tx, app }: CallContext, a: ApplicationsTable, changes: SettingsChanges, flipCdn = false) {
  // Every one of them is the edge's: maintenance, IP restriction, the CDN and its purges.
  servingChanged(app, tx);
  const updated_at = new Date().toISOString();
  const row = { ...defaults(a), ...changes, updated_at };
  return flipCdn ? upsertSettingsFlippingCdn(tx, row) : upsertSettings(tx, row, changes);
}

/** The application of the company that may be changed (404 for others, 400 while it is being deleted). */
async function mutableApp(ctx: CallContext, id: string) {
  const a = await findApp(ctx, id);
  assertMutable(a);
  return a;
}

// --- Maintenance mode --------------------------------------------------------------------------

const maintenanceView = (s: ApplicationSettingsTable) => ({ is_enabled: bool(s.maintenance_enabled), page_url: s.maintenance_page_url });

export async function getMaintenance(ctx: CallContext, id: string) {
  const { tx } = ctx;
  return maintenanceView(await settingsOf(tx, await findApp(ctx, id)));
}

/** An absolute https URL with a host (the contract's pattern checks only the prefix). */
function checkPageUrl(u: string) {
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    throw badRequest('page_url must be an absolute HTTPS URL');
  }
  if (url.protocol !== 'https:' || !url.hostname) throw badRequest('page_url must be an HTTPS page (https://...)');
}

/** `page_url` omitted keeps the current page; null returns to the default page. */
export async function updateMaintenance(ctx: CallContext, id: string, body: { is_enabled: boolean; page_url?: string | null }) {
  const a = await mutableApp(ctx, id);
  if (body.page_url) checkPageUrl(body.page_url);
  const changes: Partial<ApplicationSettingsTable> = { maintenance_enabled: body.is_enabled ? 1 : 0 };
  if (body.page_url !== undefined) changes.maintenance_page_url = body.page_url;
  return maintenanceView(await saveSettings(ctx, a, changes));
}

// --- Egress IPs --------------------------------------------------------------------------------

/** Regions whose outbound traffic leaves through one fixed NAT gateway address; the others use published IPv4 ranges. */
export const FIXED_EGRESS_REGIONS = new Set(['europe-west3', 'australia-southeast1']);

/** The egress addresses of a cluster: deterministic from its name. */
export function egressIps(clusterId: string): string[] {
  const name = CLUSTER_BY_ID.get(clusterId)?.name ?? clusterId;
  const n = (k: string, mod: number) => Math.floor(seeded(`egress:${name}:${k}`) * mod);
  if (FIXED_EGRESS_REGIONS.has(name)) return [`152.70.${1 + n('a', 254)}.${1 + n('b', 254)}`];
  const count = 2 + n('count', 3);
  return Array.from({ length: count }, (_, i) => `34.${64 + n(`r${i}`, 64)}.${n(`s${i}`, 16) * 16}.0/20`);
}

export async function getEgressIps(ctx: CallContext, id: string) {
  const a = await findApp(ctx, id);
  return { egress_ips: egressIps(a.cluster_id) };
}

// --- IP restriction ----------------------------------------------------------------------------

const ipView = (s: ApplicationSettingsTable) => ({ type: s.ip_type, is_enabled: bool(s.ip_enabled), ip_list: JSON.parse(s.ip_list) as string[] });

export async function getIpRestriction(ctx: CallContext, id: string) {
  const { tx } = ctx;
  return ipView(await settingsOf(tx, await findApp(ctx, id)));
}

/** One list is active at a time: the update replaces type, flag and entries together. */
export async function updateIpRestriction(ctx: CallContext, id: string, input: { type: 'allow' | 'deny'; is_enabled: boolean; ip_list: string[] }) {
  const a = await mutableApp(ctx, id);
  const list = ipList(input.ip_list);
  return ipView(await saveSettings(ctx, a, { ip_type: input.type, ip_enabled: input.is_enabled ? 1 : 0, ip_list: JSON.stringify(list) }));
}

// --- CDN and cache -----------------------------------------------------------------------------

export async function toggleCdn(ctx: CallContext, id: string) {
  const a = await mutableApp(ctx, id);
  // Flipped in the statement (a first change turns it on), not from a value read before.
  const s = await saveSettings(ctx, a, { cdn_enabled: 1 }, true);
  ctx.app.runtimes.edge?.cache.purge(a.id);
  return { is_turned_on: bool(s.cdn_enabled) };
}

/** Empties the application's edge cache: at once in this process, through `cache_purged_at` in the others. */
export async function purgeCache(ctx: CallContext, id: string) {
  const a = await mutableApp(ctx, id);
  await saveSettings(ctx, a, { cache_purged_at: new Date().toISOString() });
  ctx.app.runtimes.edge?.cache.purge(a.id);
  return { message: 'Cache purge started' };
}

// --- Access logs -------------------------------------------------------------------------------

/** HTTP access log lines: the edge's records, or simulated ones without an edge (none before the first successful deployment or while suspended). */
export async function accessLogs(ctx: CallContext, id: string, q: { from?: string; to?: string; filters?: string; limit?: number }) {
  const a = await findApp(ctx, id);
  return accessLog(ctx.app, await trafficOf(ctx.tx, a), q);
}

// --- TCP proxies and private ports -------------------------------------------------------------

/** A process of the application that runs continuously (web or worker); 400 otherwise. */
async function portProcess(ctx: CallContext, appId: string, processId: string) {
  const p = await ctx.app.ports.processes.find(ctx.tx, appId, processId);
  if (!p) throw badRequest(`Unknown process_id ${processId} for this application`);
  if (p.type !== 'web' && p.type !== 'worker') throw badRequest(`Ports can be exposed only on web and worker processes, not on a ${p.type} process`);
  return p;
}

const EXTERNAL_PORTS = { first: 30000, last: 30999 };

export async function listTcpProxies(ctx: CallContext, id: string, page: Page) {
  const { tx } = ctx;
  await findApp(ctx, id);
  return listTcpProxiesPage(tx, id, page);
}

/** 400 when the process's port already has a row in `table` (a TCP proxy, or a private port); `taken` ends the message. */
async function assertPortUnused(
  tx: Tx,
  table: 'application_tcp_proxies' | 'application_private_ports',
  appId: string,
  body: { process_id: string; port: number },
  taken: string,
): Promise<void> {
  const dup = await findPortRow(tx, table, appId, body.process_id, body.port);
  if (dup) throw badRequest(`Port ${body.port} of this process ${taken}`);
}

/** A public TCP proxy: the lowest free external port of the cluster (30000-30999) on the cluster's proxy hostname. */
export async function createTcpProxy(ctx: CallContext, id: string, body: { process_id: string; port: number }) {
  const { tx, companyId } = ctx;
  const a = await mutableApp(ctx, id);
  await portProcess(ctx, a.id, body.process_id);
  // External ports are allocated per cluster: one allocation at a time (and so one check of duplicates).
  await lockClusterTcpProxies(tx, a.cluster_id);
  await assertPortUnused(tx, 'application_tcp_proxies', a.id, body, 'already has a TCP proxy');
  const used = new Set(await usedExternalPorts(tx, a.cluster_id));
  let external = EXTERNAL_PORTS.first;
  while (used.has(external) && external <= EXTERNAL_PORTS.last) external++;
  if (external > EXTERNAL_PORTS.last) throw badRequest('No free external TCP port is left in this region');
  const cluster = CLUSTER_BY_ID.get(a.cluster_id)?.name ?? 'local';
  const now = new Date().toISOString();
  const row = {
    id: newId(),
    app_id: a.id,
    company_id: companyId,
    cluster_id: a.cluster_id,
    process_id: body.process_id,
    port: body.port,
    external_port: external,
    hostname: `tcp.${cluster}.slipway.app`,
    status: 'ready' as const,
    created_at: now,
    updated_at: now,
  };
  await insertTcpProxy(tx, row);
  const { company_id: _c, cluster_id: _cl, ...view } = row;
  return view;
}

export async function deleteTcpProxy(ctx: CallContext, id: string, proxyId: string) {
  const { tx } = ctx;
  const a = await mutableApp(ctx, id);
  if (!(await deleteTcpProxyRow(tx, a.id, proxyId))) throw notFound('TCP proxy');
  return { message: 'TCP proxy deleted' };
}

export async function listPrivatePorts(ctx: CallContext, id: string, page: Page) {
  const { tx } = ctx;
  await findApp(ctx, id);
  return listPrivatePortsPage(tx, id, page);
}

export async function createPrivatePort(ctx: CallContext, id: string, body: { process_id: string; port: number }) {
  const { tx, companyId } = ctx;
  const a = await mutableApp(ctx, id);
  await portProcess(ctx, a.id, body.process_id);
  await lockPrivatePorts(tx, a.id);
  await assertPortUnused(tx, 'application_private_ports', a.id, body, 'is already exposed privately');
  const now = new Date().toISOString();
  const row = {
    id: newId(),
    app_id: a.id,
    company_id: companyId,
    process_id: body.process_id,
    port: body.port,
    status: 'ready' as const,
    created_at: now,
    updated_at: now,
  };
  await insertPrivatePort(tx, row);
  const { company_id: _c, ...view } = row;
  return view;
}

export async function deletePrivatePort(ctx: CallContext, id: string, portId: string) {
  const { tx } = ctx;
  const a = await mutableApp(ctx, id);
  if (!(await deletePrivatePortRow(tx, a.id, portId))) throw notFound('Private port');
  return { message: 'Private port deleted' };
}
