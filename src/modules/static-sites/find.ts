// Finding the caller's static site: the company's site by id, or 404 (sites being deleted are
// still found, status `deleting`).
import type { CallContext } from '../../shared/context.js';
import { notFound } from '../../shared/errors.js';
import { siteOfCompany, siteOfCompanyWithRunning, type RunningDeployment, type StaticSitesTable } from './storage.js';

/** The caller's company's static site `id`, or 404. */
export async function findSite({ tx, companyId }: CallContext, id: string): Promise<StaticSitesTable> {
  const s = await siteOfCompany(tx, companyId, id);
  if (!s) throw notFound('Static site');
  return s;
}

/**
 * `findSite` and its production deployment in progress (null: none), in one statement: a read of
 * the site counts toward that deployment in `reads` progression.
 */
export async function siteWithRunning({ tx, companyId }: CallContext, id: string): Promise<{ site: StaticSitesTable; running: RunningDeployment | null }> {
  const found = await siteOfCompanyWithRunning(tx, companyId, id);
  if (!found) throw notFound('Static site');
  return found;
}
