import type { AppContext } from '../../shared/context.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';

export const operations = [
  defineOperation({
    contract: c.listProjectsContract,
    permission: 'PROJECT:READ',
    tier: 'read',
    pure: true,
    handler: async (r) => svc.listProjects(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.createProjectContract,
    permission: 'PROJECT:CREATE',
    tier: 'general_write',
    singleWrite: true,
    handler: async (r) => svc.createProject(r, r.body.display_name),
  }),
  defineOperation({
    contract: c.getProjectContract,
    permission: 'PROJECT:READ',
    tier: 'read',
    pure: true,
    handler: async (r) => svc.getProject(r, r.params.id),
  }),
  defineOperation({
    contract: c.updateProjectContract,
    permission: 'PROJECT:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.updateProject(r, r.params.id, r.body.display_name),
  }),
  defineOperation({
    contract: c.deleteProjectContract,
    permission: 'PROJECT:DELETE',
    tier: 'general_write',
    handler: async (r) => svc.deleteProject(r, r.params.id),
  }),
  defineOperation({
    contract: c.addServiceToProjectContract,
    permission: 'PROJECT:UPDATE',
    tier: 'general_write',
    references: [{ in: 'body', field: 'service_id', kind: { field: 'service_type' }, action: 'READ' }],
    handler: async (r) => svc.addService(r, r.params.id, r.body.service_id, r.body.service_type),
  }),
  defineOperation({
    contract: c.removeServiceFromProjectContract,
    permission: 'PROJECT:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.removeService(r, r.params.id, r.params.service_id, r.query.service_type),
  }),
];

export function setup(app: AppContext): void {
  app.services.registerResource('project', svc.projectSummary);
}
