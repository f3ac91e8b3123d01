import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import * as c from './schemas.js';
import * as svc from './service.js';

export const operations = [
  defineOperation({
    contract: c.listProjectsContract,
    permission: 'PROJECT:READ',
    tier: 'read',
    handler: async ({ tx, auth, query, scope }) => svc.listProjects(tx, auth.company.id, pageOf(query), scope),
  }),
  defineOperation({
    contract: c.createProjectContract,
    permission: 'PROJECT:CREATE',
    tier: 'general_write',
    handler: async ({ tx, auth, body }) => svc.createProject(tx, auth.company.id, body.display_name),
  }),
  defineOperation({
    contract: c.getProjectContract,
    permission: 'PROJECT:READ',
    tier: 'read',
    handler: async ({ tx, app, auth, params }) => svc.getProject(tx, app, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.updateProjectContract,
    permission: 'PROJECT:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, auth, params, body }) => svc.updateProject(tx, auth.company.id, params.id, body.display_name),
  }),
  defineOperation({
    contract: c.deleteProjectContract,
    permission: 'PROJECT:DELETE',
    tier: 'general_write',
    handler: async ({ tx, auth, params }) => svc.deleteProject(tx, auth.company.id, params.id),
  }),
  defineOperation({
    contract: c.addServiceToProjectContract,
    permission: 'PROJECT:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params, body }) => svc.addService(tx, app, auth.company.id, params.id, body.service_id, body.service_type),
  }),
  defineOperation({
    contract: c.removeServiceFromProjectContract,
    permission: 'PROJECT:UPDATE',
    tier: 'general_write',
    handler: async ({ tx, app, auth, params, query }) => svc.removeService(tx, app, auth.company.id, params.id, params.service_id, query.service_type),
  }),
];
