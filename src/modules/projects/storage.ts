// Queries of the projects area: projects and the links of services to them (project_services).
// Both tables, their types and migrations are the foundation's (src/shared/db).
import type { Scope } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import type { ProjectServicesTable, ProjectsTable } from '../../shared/db/schema.js';
import { insertNamed } from '../../shared/naming.js';
import { paginate, type Page } from '../../shared/pagination.js';

/** The columns of a project in a list. */
const LISTED = ['id', 'name', 'display_name', 'created_at', 'updated_at'] as const;

/**
 * A page of a company's projects, limited to `scope` when given; the whole list (no scope) is a
 * counted list, read as of `asOf` (CallContext.asOf).
 */
export async function listProjectsPage(tx: Tx, companyId: string, scope: Scope, asOf: string | undefined, page: Page) {
  const q = () => {
    const all = tx.selectFrom('projects').select(LISTED).where('company_id', '=', companyId);
    return scope ? all.where('id', 'in', scope.size ? [...scope] : ['']) : all;
  };
  return paginate(q, page, undefined, scope ? undefined : { tx, table: 'projects', companyId, asOf, columns: LISTED });
}

export async function findProject(tx: Tx, companyId: string, id: string): Promise<ProjectsTable | undefined> {
  return tx.selectFrom('projects').selectAll().where('id', '=', id).where('company_id', '=', companyId).executeTakeFirst();
}

/** Inserts the project `build` makes for a name derived from `displayName`, unique in the company (`insertNamed`). */
export async function insertNamedProject(tx: Tx, companyId: string, displayName: string, build: (name: string) => ProjectsTable): Promise<ProjectsTable> {
  return insertNamed(tx, 'projects', companyId, displayName, build);
}

export async function updateProjectDisplayName(tx: Tx, id: string, displayName: string, updatedAt: string) {
  await tx.updateTable('projects').set({ display_name: displayName, updated_at: updatedAt }).where('id', '=', id).execute();
}

/** Deletes a project and its links (the links first). */
export async function deleteProjectWithLinks(tx: Tx, id: string) {
  await tx.deleteFrom('project_services').where('project_id', '=', id).execute();
  await tx.deleteFrom('projects').where('id', '=', id).execute();
}

/** The services linked to a project, in the order they were added. */
export async function listProjectLinks(tx: Tx, projectId: string): Promise<ProjectServicesTable[]> {
  return tx.selectFrom('project_services').selectAll().where('project_id', '=', projectId).orderBy('created_at').orderBy('service_id').execute();
}

/** Links a service to a project; a link that exists already is kept as it is. */
export async function insertLinkIfAbsent(tx: Tx, row: ProjectServicesTable) {
  await tx
    .insertInto('project_services')
    .values(row)
    .onConflict((oc) => oc.columns(['project_id', 'service_id']).doNothing())
    .execute();
}

export async function insertLink(tx: Tx, row: ProjectServicesTable) {
  await tx.insertInto('project_services').values(row).execute();
}

/** Removes the link of a service (of that type) to a project; returns whether there was one. */
export async function deleteLink(tx: Tx, projectId: string, serviceId: string, type: string): Promise<boolean> {
  const res = await tx
    .deleteFrom('project_services')
    .where('project_id', '=', projectId)
    .where('service_id', '=', serviceId)
    .where('service_type', '=', type)
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** Removes a service's links to every project. */
export async function deleteLinksOfService(tx: Tx, serviceId: string) {
  await tx.deleteFrom('project_services').where('service_id', '=', serviceId).execute();
}
