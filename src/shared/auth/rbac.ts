// The role and permission table. A permission is `<RESOURCE>:<ACTION>`; routes declare the one
// they need, keys get permissions from predefined roles and from custom capabilities, which may
// be scoped to a single resource id.
import { stableUuid } from '../ids.js';

export const RESOURCES = [
  'APP',
  'PIPELINE',
  'DATABASE',
  'STATIC_SITE',
  'LOAD_BALANCER',
  'OBJECT_STORAGE',
  'BILLING',
  'COMPANY',
  'PROJECT',
  'WEBHOOK',
  'API_KEY',
  'REGISTRY_CREDENTIAL',
] as const;
export const ACTIONS = ['CREATE', 'READ', 'UPDATE', 'DELETE'] as const;
export type Resource = (typeof RESOURCES)[number];
export type Action = (typeof ACTIONS)[number];
export type Permission = `${Resource}:${Action}`;

const RESOURCE_LABEL: Record<Resource, string> = {
  APP: 'applications',
  PIPELINE: 'pipelines',
  DATABASE: 'databases',
  STATIC_SITE: 'static sites',
  LOAD_BALANCER: 'load balancers',
  OBJECT_STORAGE: 'object storage buckets',
  BILLING: 'billing and usage alerts',
  COMPANY: 'company settings and members',
  PROJECT: 'projects',
  WEBHOOK: 'webhooks',
  API_KEY: 'API keys',
  REGISTRY_CREDENTIAL: 'registry credentials',
};
const ACTION_VERB: Record<Action, string> = { CREATE: 'Create', READ: 'View', UPDATE: 'Change', DELETE: 'Delete' };

export interface PermissionInfo {
  id: string;
  name: Permission;
  description: string;
  resource: Resource;
  action: Action;
}

export const PERMISSIONS: PermissionInfo[] = RESOURCES.flatMap((resource) =>
  ACTIONS.map((action) => ({
    id: stableUuid(`permission:${resource}:${action}`),
    name: `${resource}:${action}` as Permission,
    description: `${ACTION_VERB[action]} ${RESOURCE_LABEL[resource]}`,
    resource,
    action,
  })),
);
const PERMISSION_NAMES = new Set<string>(PERMISSIONS.map((p) => p.name));
export const isPermission = (s: string): s is Permission => PERMISSION_NAMES.has(s);

const all = (resources: readonly Resource[], actions: readonly Action[] = ACTIONS): Permission[] =>
  resources.flatMap((r) => actions.map((a) => `${r}:${a}` as Permission));

const SERVICE_RESOURCES: Resource[] = ['APP', 'PIPELINE', 'DATABASE', 'STATIC_SITE', 'LOAD_BALANCER', 'OBJECT_STORAGE'];

export interface RoleInfo {
  id: string;
  name: string;
  description: string;
  permissions: Permission[];
}

export const ROLES: RoleInfo[] = [
  {
    id: stableUuid('role:company-admin'),
    name: 'Company Admin',
    description: 'Full access to every resource of the company, including API keys and billing',
    permissions: all(RESOURCES),
  },
  {
    id: stableUuid('role:company-developer'),
    name: 'Company Developer',
    description: 'Builds and runs services: full access to services, projects, webhooks and registry credentials; no API keys or billing',
    permissions: [...all([...SERVICE_RESOURCES, 'PROJECT', 'WEBHOOK', 'REGISTRY_CREDENTIAL']), 'COMPANY:READ'],
  },
  {
    id: stableUuid('role:company-billing'),
    name: 'Company Billing',
    description: 'Manages billing and usage alerts and can see company details',
    permissions: [...all(['BILLING']), 'COMPANY:READ'],
  },
  {
    id: stableUuid('role:company-viewer'),
    name: 'Company Viewer',
    description: 'Reads everything the company has and changes nothing',
    permissions: all(RESOURCES, ['READ']),
  },
];
export const ROLE_BY_ID = new Map(ROLES.map((r) => [r.id, r]));
export const ROLE_BY_NAME = new Map(ROLES.map((r) => [r.name.toLowerCase(), r]));

export interface Capability {
  id: string;
  permission: string;
  id_resource: string | null;
}

/** What a key may do: per permission, either everything or a set of resource ids. */
export type Grants = Map<Permission, { all: boolean; ids: Set<string> }>;

export function computeGrants(roleIds: string[], capabilities: Capability[]): Grants {
  const grants: Grants = new Map();
  const add = (p: Permission, id: string | null) => {
    let g = grants.get(p);
    if (!g) grants.set(p, (g = { all: false, ids: new Set() }));
    if (id === null) g.all = true;
    else g.ids.add(id);
  };
  for (const rid of roleIds) for (const p of ROLE_BY_ID.get(rid)?.permissions ?? []) add(p, null);
  for (const c of capabilities) if (isPermission(c.permission)) add(c.permission, c.id_resource ?? null);
  return grants;
}

/** Whether `grants` hold `permission` for resource `id` (no grants: a system call, which holds everything). */
export function grantsAllow(grants: Grants | null, permission: Permission, id: string): boolean {
  if (!grants) return true;
  const g = grants.get(permission);
  return !!g && (g.all || g.ids.has(id));
}

/** True when `holder` has every permission in `wanted` at least as broadly. */
export function grantsCover(holder: Grants, wanted: Grants): boolean {
  for (const [p, w] of wanted) {
    const h = holder.get(p);
    if (!h) return false;
    if (h.all) continue;
    if (w.all) return false;
    for (const id of w.ids) if (!h.ids.has(id)) return false;
  }
  return true;
}

export const missingPermissionMessage = (p: Permission) =>
  `This API key is missing the permission ${p}. Grant ${p} to the key or use another API key that has it.`;
