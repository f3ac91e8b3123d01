// The kinds of service the dashboard shows: one entry each, read by the overview (lists, create
// menu) and the router. A kind with a page has `link`; a new page is one file in pages/, its route
// in routes.tsx and its `link` here.
import type { ComponentType } from 'react';
import { NewApplication, NewBucket, NewDatabase, NewLoadBalancer, NewPipeline, NewStaticSite } from './create.js';

export interface ServiceKind {
  /** The list path without its slash, also the query key of the list. */
  key: string;
  label: string;
  one: string;
  /** The service type in a project's `services`. */
  projectType: 'app' | 'database' | 'static-site' | 'object-storage' | 'load-balancer' | 'pipeline';
  permission: { read: string; create: string };
  link?: (id: string) => string;
  Create: ComponentType<{ project: string }>;
}

export const SERVICE_KINDS: ServiceKind[] = [
  {
    key: 'applications',
    label: 'Applications',
    one: 'application',
    projectType: 'app',
    permission: { read: 'APP:READ', create: 'APP:CREATE' },
    link: (id) => `/apps/${id}`,
    Create: NewApplication,
  },
  {
    key: 'databases',
    label: 'Databases',
    one: 'database',
    projectType: 'database',
    permission: { read: 'DATABASE:READ', create: 'DATABASE:CREATE' },
    link: (id) => `/databases/${id}`,
    Create: NewDatabase,
  },
  {
    key: 'static-sites',
    label: 'Static sites',
    one: 'static site',
    projectType: 'static-site',
    permission: { read: 'STATIC_SITE:READ', create: 'STATIC_SITE:CREATE' },
    link: (id) => `/static-sites/${id}`,
    Create: NewStaticSite,
  },
  {
    key: 'object-storage',
    label: 'Buckets',
    one: 'bucket',
    projectType: 'object-storage',
    permission: { read: 'OBJECT_STORAGE:READ', create: 'OBJECT_STORAGE:CREATE' },
    link: (id) => `/buckets/${id}`,
    Create: NewBucket,
  },
  {
    key: 'load-balancers',
    label: 'Load balancers',
    one: 'load balancer',
    projectType: 'load-balancer',
    permission: { read: 'LOAD_BALANCER:READ', create: 'LOAD_BALANCER:CREATE' },
    link: (id) => `/load-balancers/${id}`,
    Create: NewLoadBalancer,
  },
  {
    key: 'pipelines',
    label: 'Pipelines',
    one: 'pipeline',
    projectType: 'pipeline',
    permission: { read: 'PIPELINE:READ', create: 'PIPELINE:CREATE' },
    link: (id) => `/pipelines/${id}`,
    Create: NewPipeline,
  },
];
