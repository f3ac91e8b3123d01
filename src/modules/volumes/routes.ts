// Operations of the volumes area. Volumes belong to an application: the permission is the
// application's (APP:READ / APP:UPDATE, as for its processes) and the scoped resource is the
// application `id`. Every operation is this project's decision (x-decided in the served document).
import type { AppContext } from '../../shared/context.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';
import { deleteAppVolumes, setUsedBytes } from './storage.js';

export { migrations, tables } from './storage.js';

export const operations = [
  defineOperation({
    contract: c.listVolumesContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async (r) => svc.listVolumes(r, r.params.id, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createVolumeContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.createVolume(r, r.params.id, r.body),
  }),
  defineOperation({
    contract: c.getVolumeContract,
    permission: 'APP:READ',
    tier: 'read',
    handler: async (r) => svc.getVolume(r, r.params.id, r.params.volume_id),
  }),
  defineOperation({
    contract: c.updateVolumeContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.updateVolume(r, r.params.id, r.params.volume_id, r.body),
  }),
  defineOperation({
    contract: c.deleteVolumeContract,
    permission: 'APP:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.deleteVolume(r, r.params.id, r.params.volume_id),
  }),
];

/**
 * Volumes go with their application (its removal, after the runtime tore it down); a clone starts
 * without any, so `application.created` needs no answer. Runtime drivers reach the volumes through
 * the port.
 */
export function setup(app: AppContext): void {
  app.events.on('application.removed', (tx, { application }) => deleteAppVolumes(tx, application.id));
  app.ports.volumes = { of: svc.volumesOf, recordUsage: setUsedBytes };
}
