// Projects group a company's services. Services are looked up through the service registry,
// so only kinds that a module has registered can be added.
import type { AppContext, CallContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import type { ProjectsTable } from '../../shared/db/schema.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Page } from '../../shared/pagination.js';
import type { ServiceSummary } from '../../shared/services.js';
import {
  deleteLink,
  deleteLinksOfService,
  deleteProjectWithLinks,
  findProject,
  insertLink,
  insertLinkIfAbsent,
  insertNamedProject,
  listProjectLinks,
  listProjectsPage,
  updateProjectDisplayName,
} from './storage.js';

const view = (p: ProjectsTable) => ({
  id: p.id,
  company_id: p.company_id,
  name: p.name,
  display_name: p.display_name,
  created_at: p.created_at,
  updated_at: p.updated_at,
});

export async function listProjects({ tx, companyId, scope, asOf }: CallContext, page: Page) {
  return listProjectsPage(tx, companyId, scope, asOf, page);
}

const lookup = ({ tx, companyId }: CallContext, id: string) => findProject(tx, companyId, id);

/** The caller's company's project `id`, or the path id's 404 (also for services that name a project_id). */
export async function requireProject(ctx: CallContext, id: string): Promise<ProjectsTable> {
  const p = await lookup(ctx, id);
  if (!p) throw notFound('Project');
  return p;
}

/** The registry's view of a project (reference checks of `project_id` fields). */
export async function projectSummary(ctx: CallContext, id: string) {
  const p = await lookup(ctx, id);
  return p && { id: p.id, name: p.name, display_name: p.display_name };
}

export async function createProject({ tx, companyId }: CallContext, displayName: string) {
  const now = new Date().toISOString();
  const row = await insertNamedProject(tx, companyId, displayName, (name): ProjectsTable => ({
    id: newId(),
    company_id: companyId,
    name,
    display_name: displayName,
    created_at: now,
    updated_at: now,
  }));
  return view(row);
}

export async function getProject(ctx: CallContext, id: string) {
  const { tx, app } = ctx;
  const p = await requireProject(ctx, id);
  const links = await listProjectLinks(tx, id);
  // One query per kind of service present, not one per service.
  const idsOf = new Map<string, string[]>();
  for (const l of links) {
    const ids = idsOf.get(l.service_type);
    if (ids) ids.push(l.service_id);
    else idsOf.set(l.service_type, [l.service_id]);
  }
  const found = new Map<string, ServiceSummary>();
  for (const [type, ids] of idsOf) for (const s of (await app.services.get(type)?.summaries(ctx, ids)) ?? []) found.set(`${type}:${s.id}`, s);
  const services = [];
  for (const l of links) {
    const s = found.get(`${l.service_type}:${l.service_id}`);
    if (s) services.push({ id: s.id, name: s.name, display_name: s.display_name, type: l.service_type as 'app' });
  }
  return { ...view(p), services };
}

export async function updateProject(ctx: CallContext, id: string, displayName: string) {
  const { tx } = ctx;
  const p = await requireProject(ctx, id);
  const updated = { ...p, display_name: displayName, updated_at: new Date().toISOString() };
  await updateProjectDisplayName(tx, id, displayName, updated.updated_at);
  return view(updated);
}

export async function deleteProject(ctx: CallContext, id: string) {
  const { tx } = ctx;
  await requireProject(ctx, id);
  await deleteProjectWithLinks(tx, id);
  return { message: 'Project deleted' };
}

function kindOf(app: AppContext, type: string) {
  const kind = app.services.get(type);
  if (!kind) throw badRequest(`Service type "${type}" is not available on this server yet (available: ${app.services.types().join(', ') || 'none'})`);
  return kind;
}

export async function addService(ctx: CallContext, id: string, serviceId: string, type: string) {
  const { tx, app, companyId } = ctx;
  await requireProject(ctx, id);
  const s = await kindOf(app, type).find(ctx, serviceId);
  if (!s) throw notFound('Service');
  await insertLinkIfAbsent(tx, { project_id: id, service_id: serviceId, service_type: type, company_id: companyId, created_at: new Date().toISOString() });
  return { message: 'Service added to project' };
}

export async function removeService(ctx: CallContext, id: string, serviceId: string, type: string) {
  const { tx, app } = ctx;
  await requireProject(ctx, id);
  kindOf(app, type);
  if (!(await deleteLink(tx, id, serviceId, type))) throw notFound('Service in this project');
  return { message: 'Service removed from project' };
}

/**
 * Puts a service into project `projectId` (null: into none), leaving any project it was in. Service
 * modules call it on create and on moves; a project the company does not have is the path id's 404
 * (the router's reference check answers it first; this one holds inside the transaction).
 */
export async function placeService(ctx: CallContext, serviceId: string, type: string, projectId: string | null): Promise<void> {
  const { tx, companyId } = ctx;
  if (projectId) await requireProject(ctx, projectId);
  await forgetService(tx, serviceId);
  if (projectId)
    await insertLink(tx, { project_id: projectId, service_id: serviceId, service_type: type, company_id: companyId, created_at: new Date().toISOString() });
}

/** Called by service modules when a service is deleted (by a job: any transaction will do). */
export async function forgetService(tx: Tx, serviceId: string): Promise<void> {
  await deleteLinksOfService(tx, serviceId);
}
