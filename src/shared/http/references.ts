// Resource ids a request names outside its path (body or query fields such as `project_id`,
// `target_database_id`, `service_id`, `docker_registry_credential_id`) are checked exactly like a
// path id, before the handler runs: the key needs the named permission on that very resource (a
// capability scoped to other ids does not cover it) and the resource must exist in the key's
// company. Either failure is the same 404 a path id gets, so nothing about other companies' or
// out-of-scope resources leaks. Operations declare their references (`Operation.references`), so
// a new operation cannot forget the check; the resources are found through the registry that the
// owning modules fill (`app.services`).
import type { Action, Permission, Resource } from '../auth/rbac.js';
import type { CallContext } from '../context.js';
import { notFound } from '../errors.js';
import type { AuthContext } from '../auth/authenticate.js';

/** The registry kind of each resource type a reference may name, and its RBAC resource. */
export const REFERENCE_KINDS = {
  app: 'APP',
  database: 'DATABASE',
  pipeline: 'PIPELINE',
  'object-storage': 'OBJECT_STORAGE',
  'static-site': 'STATIC_SITE',
  'load-balancer': 'LOAD_BALANCER',
  project: 'PROJECT',
  'docker-registry': 'REGISTRY_CREDENTIAL',
} as const satisfies Record<string, Resource>;
export type ReferenceKind = keyof typeof REFERENCE_KINDS;

export interface Reference {
  /** The request part and field holding the id (null or absent: nothing to check). */
  in: 'body' | 'query';
  field: string;
  /** The kind of resource, or the body/query field that names it (e.g. `service_type`; the values are registry kinds). */
  kind: ReferenceKind | { field: string };
  /** What the action needs on the referenced resource: `<its resource>:<action>`... */
  action: Action;
  /** ...unless the operation names another permission that decides (e.g. billing on a project's budget). */
  permission?: Permission;
}

/** The references several operations share. */
export const ref = {
  /** `project_id` of a service being created or moved: the key must see the project. */
  project: { in: 'body', field: 'project_id', kind: 'project', action: 'READ' },
  /** A usage alert's project: setting a budget is the billing permission's business (billing keys see no projects). */
  budgetProject: { in: 'body', field: 'project_id', kind: 'project', action: 'READ', permission: 'BILLING:CREATE' },
  budgetProjectQuery: { in: 'query', field: 'project_id', kind: 'project', action: 'READ', permission: 'BILLING:READ' },
  registryCredential: { in: 'body', field: 'docker_registry_credential_id', kind: 'docker-registry', action: 'READ' },
  /** A restore overwrites the target database: the key must be allowed to change it. */
  targetDatabase: { in: 'body', field: 'target_database_id', kind: 'database', action: 'UPDATE' },
  connectionTarget: { in: 'body', field: 'target_id', kind: { field: 'target_type' }, action: 'READ' },
  objectStorage: { in: 'body', field: 'object_storage_id', kind: 'object-storage', action: 'READ' },
} as const satisfies Record<string, Reference>;

const kindAliases: Record<string, ReferenceKind> = {
  database: 'database',
  app: 'app',
  appResource: 'app',
  dbResource: 'database',
  // A load balancer destination's `service_type`.
  APP: 'app',
  STATIC_SITE: 'static-site',
  OBJECT_STORAGE: 'object-storage',
  LOAD_BALANCER: 'load-balancer',
};

/** Checks every declared reference of a request; throws the path id's 404 on the first that fails. */
export async function checkReferences(
  refs: readonly Reference[],
  ctx: CallContext,
  auth: AuthContext,
  parts: { body: unknown; query: unknown },
): Promise<void> {
  for (const ref of refs) {
    const source = (ref.in === 'body' ? parts.body : parts.query) as Record<string, unknown> | null | undefined;
    const id = source?.[ref.field];
    if (id === undefined || id === null || id === '') continue;
    const named = typeof ref.kind === 'string' ? ref.kind : source?.[ref.kind.field];
    const kind = typeof named === 'string' ? ((named in REFERENCE_KINDS ? named : kindAliases[named]) as ReferenceKind | undefined) : undefined;
    // An unknown kind is the schema's or the module's to reject (400), not a reference to check.
    if (!kind) continue;
    const g = auth.grants.get(ref.permission ?? `${REFERENCE_KINDS[kind]}:${ref.action}`);
    if (typeof id !== 'string' || !g || (!g.all && !g.ids.has(id))) throw notFound();
    const resolver = ctx.app.services.resolver(kind);
    if (resolver && !(await resolver(ctx, id))) throw notFound();
  }
}
