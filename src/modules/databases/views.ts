// Representations of a database row, shared by the service (responses) and the event sources
// (webhook payloads). Imports neither of them.
import { idDigits } from '../../shared/ids.js';
import { CLUSTER_BY_ID, DATABASE_RESOURCE_TYPE_BY_ID } from '../resources/index.js';
import { runtimeState, type RuntimeState } from './runtime/state.js';
import type { DatabasesTable } from './storage.js';

export const bool = (n: number) => n === 1;

const internalHostname = (d: DatabasesTable) => `${d.name}-${idDigits(d.id, 8)}.${CLUSTER_BY_ID.get(d.cluster_id)?.name ?? 'cluster'}.svc.internal`;

/** Representation of create and update. */
export function databaseView(d: DatabasesTable) {
  return {
    id: d.id,
    company_id: d.company_id,
    project_id: d.project_id,
    name: d.name,
    display_name: d.display_name,
    type: d.type,
    version: d.version,
    status: d.status,
    is_suspended: bool(d.is_suspended),
    resource_type_name: DATABASE_RESOURCE_TYPE_BY_ID.get(d.resource_type_id)?.name ?? null,
    created_at: d.created_at,
    updated_at: d.updated_at,
    backup_status: d.backup_status,
  };
}

/** Representation of GET /databases/{id}: connection facts, never the password. */
export function databaseDetailView(d: DatabasesTable) {
  const cluster = CLUSTER_BY_ID.get(d.cluster_id);
  const rt = DATABASE_RESOURCE_TYPE_BY_ID.get(d.resource_type_id);
  const external = bool(d.external_enabled);
  const runtime = runtimeState(d);
  return {
    ...databaseView(d),
    cluster_id: d.cluster_id,
    cluster_display_name: cluster?.display_name ?? null,
    cluster_location: cluster?.location ?? null,
    resource_type_id: d.resource_type_id,
    resource_type_name: rt?.name ?? null,
    cpu_limit: rt?.cpu_limit ?? null,
    memory_limit: rt?.memory_limit ?? null,
    storage_size: rt?.storage_limit ?? null,
    db_name: d.db_name,
    ...(runtime
      ? realEndpoints(d, runtime, external)
      : {
          internal_hostname: internalHostname(d),
          internal_port: d.internal_port,
          external_hostname: external ? `${d.name}-${idDigits(d.id, 8)}.${cluster?.name ?? 'cluster'}.db.slipway.app` : null,
          external_port: external ? d.external_port : null,
        }),
  };
}

/** A database on a real server: where clients really connect (as configured when it was created). */
function realEndpoints(d: DatabasesTable, s: RuntimeState, external: boolean) {
  return {
    internal_hostname: s.host,
    internal_port: d.internal_port,
    external_hostname: external ? s.externalHost : null,
    external_port: external ? String(s.externalPort || d.internal_port) : null,
  };
}

export const ipRestrictionView = (d: DatabasesTable) => ({ type: d.ip_type, is_enabled: bool(d.ip_enabled), ip_list: JSON.parse(d.ip_list) as string[] });
