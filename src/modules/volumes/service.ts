// Persistent volumes of an application: a name, an absolute mount path and a size in GB. A volume
// is mounted into every process instance of its application (web, worker, cron and job runs), the
// way Render's disk and Railway's volume attach to a whole service; there is no per-process choice.
// The rules that compare a volume with its siblings (unique name and path, no nesting, at most
// MAX_PER_APP) are checked with the application's writers taking turns (`refuseIfTaken`), so
// concurrent requests cannot both pass them. Contents are the runtime's business: the container
// driver mounts what `app.ports.volumes` lists; a clone gets no volumes (the specification).
import { posix } from 'node:path';
import type { CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { refuseIfTaken } from '../../shared/naming.js';
import type { Page } from '../../shared/pagination.js';
import { findApp, findLiveApp, type ApplicationsTable } from '../applications/index.js';
import { deleteVolumeRow, insertVolume, listVolumesPage, updateVolumeRow, volumeRow, volumesOfApp, type VolumesTable } from './storage.js';

/** How many volumes one application may have. */
export const MAX_PER_APP = 10;
/** Kernel file systems a volume would hide: not allowed as mount paths, nor anything under them. */
const RESERVED = ['/proc', '/sys', '/dev'];

const view = (v: VolumesTable, a: ApplicationsTable) => ({
  id: v.id,
  application_id: v.app_id,
  name: v.name,
  mount_path: v.mount_path,
  size_gb: v.size_gb,
  status: a.status === 'deleting' ? ('deleting' as const) : ('available' as const),
  used_bytes: v.used_bytes === null ? null : Number(v.used_bytes),
  created_at: v.created_at,
  updated_at: v.updated_at,
});

const inside = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);

/** The mount path as stored: absolute, normalised, without a trailing slash; 400 for one a volume cannot take. */
export function normaliseMountPath(input: string): string {
  if (!input.startsWith('/')) throw badRequest(`mount_path "${input}" must be an absolute path (starting with /)`);
  if (!/^[A-Za-z0-9._@+/-]+$/.test(input)) throw badRequest('mount_path may contain only letters, digits, /, ., _, -, @ and +');
  const path = posix.normalize(input).replace(/\/+$/, '');
  if (!path) throw badRequest('mount_path cannot be /: a volume cannot hide the whole file system');
  const reserved = RESERVED.find((r) => inside(path, r));
  if (reserved) throw badRequest(`mount_path cannot be ${reserved} or under it: the runtime mounts a kernel file system there`);
  return path;
}

async function findVolume(tx: Tx, appId: string, volumeId: string): Promise<VolumesTable> {
  const v = await volumeRow(tx, appId, volumeId);
  if (!v) throw notFound('Volume');
  return v;
}

/**
 * The sibling rules for `next` (a new volume, or `self` changed): checked while the application's
 * volume writers take turns, so the write that follows in the same transaction keeps them true.
 */
async function refuseClashes(tx: Tx, appId: string, next: { name: string; mount_path: string }, self?: string): Promise<void> {
  let refusal: Error | undefined;
  await refuseIfTaken(
    tx,
    `volumes:${appId}`,
    async () => {
      const others = (await volumesOfApp(tx, appId)).filter((v) => v.id !== self);
      if (!self && others.length >= MAX_PER_APP) refusal = badRequest(`An application can have at most ${MAX_PER_APP} volumes`);
      const named = others.find((v) => v.name === next.name);
      if (named) refusal ??= badRequest(`A volume named "${next.name}" already exists on this application`);
      const p = next.mount_path;
      const same = others.find((v) => v.mount_path === p);
      if (same) refusal ??= badRequest(`mount_path ${p} is already the mount path of volume "${same.name}"`);
      const outer = others.find((v) => inside(p, v.mount_path));
      if (outer) refusal ??= badRequest(`mount_path ${p} is inside volume "${outer.name}" (${outer.mount_path}): volumes cannot nest`);
      const inner = others.find((v) => inside(v.mount_path, p));
      if (inner) refusal ??= badRequest(`mount_path ${p} would contain volume "${inner.name}" (${inner.mount_path}): volumes cannot nest`);
      return !!refusal;
    },
    () => refusal!,
  );
}

export async function listVolumes(ctx: CallContext, appId: string, page: Page) {
  const a = await findApp(ctx, appId);
  const r = await listVolumesPage(ctx.tx, appId, page);
  return { ...r, data: r.data.map((v) => view(v, a)) };
}

export async function getVolume(ctx: CallContext, appId: string, volumeId: string) {
  const a = await findApp(ctx, appId);
  return view(await findVolume(ctx.tx, appId, volumeId), a);
}

interface VolumeInput {
  name: string;
  mount_path: string;
  size_gb: number;
}

export async function createVolume(ctx: CallContext, appId: string, input: VolumeInput) {
  const { tx, companyId } = ctx;
  const a = await findLiveApp(ctx, appId);
  const next = { name: input.name, mount_path: normaliseMountPath(input.mount_path) };
  await refuseClashes(tx, appId, next);
  const now = new Date().toISOString();
  const row: VolumesTable = {
    id: newId(),
    app_id: appId,
    company_id: companyId,
    ...next,
    size_gb: input.size_gb,
    used_bytes: null,
    created_at: now,
    updated_at: now,
  };
  await insertVolume(tx, row);
  return view(row, a);
}

export async function updateVolume(ctx: CallContext, appId: string, volumeId: string, input: Partial<VolumeInput>) {
  const { tx } = ctx;
  const a = await findLiveApp(ctx, appId);
  const v = await findVolume(tx, appId, volumeId);
  const set: Partial<VolumesTable> = {};
  if (input.size_gb !== undefined && input.size_gb !== v.size_gb) {
    if (input.size_gb < v.size_gb) throw badRequest(`size_gb cannot shrink (${v.size_gb} GB to ${input.size_gb} GB): a volume can only grow`);
    set.size_gb = input.size_gb;
  }
  if (input.name !== undefined && input.name !== v.name) set.name = input.name;
  if (input.mount_path !== undefined) {
    const path = normaliseMountPath(input.mount_path);
    if (path !== v.mount_path) set.mount_path = path;
  }
  if (set.name !== undefined || set.mount_path !== undefined)
    await refuseClashes(tx, appId, { name: set.name ?? v.name, mount_path: set.mount_path ?? v.mount_path }, v.id);
  // A body that changes nothing keeps the row (and its updated_at) as it is.
  if (!Object.keys(set).length) return view(v, a);
  set.updated_at = new Date().toISOString();
  return view(await updateVolumeRow(tx, v.id, set), a);
}

export async function deleteVolume(ctx: CallContext, appId: string, volumeId: string) {
  await findLiveApp(ctx, appId);
  const v = await findVolume(ctx.tx, appId, volumeId);
  await deleteVolumeRow(ctx.tx, v.id);
  await ctx.app.events.signal(ctx.tx, 'volume.deleted', { appId, volumeId: v.id });
  return { message: 'Volume deleted' };
}

/** The application's volumes as a runtime driver mounts them (`app.ports.volumes.of`). */
export async function volumesOf(tx: Tx, appId: string) {
  return (await volumesOfApp(tx, appId)).map((v) => ({ id: v.id, name: v.name, mountPath: v.mount_path, sizeGb: v.size_gb }));
}
