// The dashboard's pages by path: one line each (the first match wins).
import type { ReactNode } from 'react';
import { ApiKeysPage } from './pages/ApiKeys.js';
import { ApplicationPage } from './pages/Application.js';
import { BucketPage } from './pages/Bucket.js';
import { DatabasePage } from './pages/Database.js';
import { LoadBalancerPage } from './pages/LoadBalancer.js';
import { Overview } from './pages/Overview.js';
import { PipelinePage } from './pages/Pipeline.js';
import { SettingsPage } from './pages/Settings.js';
import { StaticSitePage } from './pages/StaticSite.js';
import { WebhooksPage } from './pages/Webhooks.js';

export const ROUTES: [pattern: string, page: (params: Record<string, string>) => ReactNode][] = [
  ['/', () => <Overview />],
  ['/apps/:id', (p) => <ApplicationPage key={p.id} id={p.id!} />],
  ['/databases/:id', (p) => <DatabasePage key={p.id} id={p.id!} />],
  ['/static-sites/:id', (p) => <StaticSitePage key={p.id} id={p.id!} />],
  ['/buckets/:id', (p) => <BucketPage key={p.id} id={p.id!} />],
  ['/load-balancers/:id', (p) => <LoadBalancerPage key={p.id} id={p.id!} />],
  ['/pipelines/:id', (p) => <PipelinePage key={p.id} id={p.id!} />],
  ['/settings', () => <SettingsPage />],
  ['/webhooks', () => <WebhooksPage />],
  ['/api-keys', () => <ApiKeysPage />],
];
