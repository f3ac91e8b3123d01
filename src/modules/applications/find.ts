// Finding the caller's application: the company's application by id, or 404 (applications being
// deleted are still found, status `deleting`).
import type { CallContext } from '../../shared/context.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { appOfCompanyById, appOfCompanyWithActive, type ActiveDeployment, type ApplicationsTable } from './storage.js';

/** The caller's company's application `id`, or 404. */
export async function findApp({ tx, companyId }: CallContext, id: string): Promise<ApplicationsTable> {
  const a = await appOfCompanyById(tx, companyId, id);
  if (!a) throw notFound('Application');
  return a;
}

/** `findApp`, refusing (400) an application being deleted: for changes to what belongs to it. */
export async function findLiveApp(ctx: CallContext, id: string): Promise<ApplicationsTable> {
  const a = await findApp(ctx, id);
  if (a.status === 'deleting') throw badRequest('The application is being deleted');
  return a;
}

/**
 * `findApp` and the application's active deployments (waiting or in progress) in one statement:
 * the trigger of a deployment reads both with the application's deployment lock held, and a read
 * of the application finds the one in progress that it may advance.
 */
export async function appWithActive({ tx, companyId }: CallContext, id: string): Promise<{ app: ApplicationsTable; active: ActiveDeployment[] }> {
  const found = await appOfCompanyWithActive(tx, companyId, id);
  if (!found) throw notFound('Application');
  return found;
}
