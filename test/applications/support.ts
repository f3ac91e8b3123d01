// Helpers shared by the application suites: applications and deployments over HTTP, polling,
// log lines, and the operator's simulation controls (progression modes and fault rules).
import assert from 'node:assert/strict';
import type { TestServer } from '../helpers/server.js';
import { untilStatus } from '../helpers/status.js';
import { expectStatus, uniqueName } from '../helpers/util.js';
import { CLUSTERS, DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';

export { DEFAULT_CLUSTER };
/** A second region, for clones into another cluster. */
export const OTHER_CLUSTER = CLUSTERS.find((c) => c.id !== DEFAULT_CLUSTER.id)!;

/** Deployments and deletions finish as soon as the job engine runs them (tests switch per test). */
export const IMMEDIATE_ENV = { SLIPWAY_SIM_PROGRESSION: 'deployment=immediate,app_delete=immediate' };

export type AppKind = 'git' | 'image';

/** Creates an application: a public git repository (checkout, build, rollout) or a Docker image (checkout, rollout). */
export async function createApp(s: TestServer, opts: { kind?: AppKind; display_name?: string; token?: string; extra?: Record<string, unknown> } = {}) {
  const kind = opts.kind ?? 'git';
  const body =
    kind === 'git'
      ? {
          display_name: opts.display_name ?? uniqueName('git app'),
          cluster_id: DEFAULT_CLUSTER.id,
          source: 'publicGit',
          git_type: 'github',
          repo_url: 'https://github.com/example/shop',
          default_branch: 'main',
        }
      : { display_name: opts.display_name ?? uniqueName('image app'), cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1.27' };
  return expectStatus(await s.post('/applications', { ...body, ...(opts.extra ?? {}) }, { token: opts.token }), 201);
}

export const appPath = (appId: string) => `/applications/${appId}`;
export const deploymentsPath = (appId: string) => `/applications/${appId}/deployments`;
export const deploymentPath = (appId: string, id: string) => `/applications/${appId}/deployments/${id}`;

/** Triggers a deployment (200 with the new deployment). */
export async function trigger(s: TestServer, appId: string, body: Record<string, unknown> = {}, token?: string) {
  return expectStatus(await s.post(deploymentsPath(appId), body, { token }), 200);
}

/** One read of the deployment (counts as a read in `reads` progression). */
export async function readDeployment(s: TestServer, appId: string, id: string, token?: string) {
  return expectStatus(await s.get(deploymentPath(appId, id), { token }), 200);
}

/** One read of the application (counts as a read of its running deployment in `reads` progression). */
export async function readApp(s: TestServer, appId: string, token?: string) {
  return expectStatus(await s.get(appPath(appId), { token }), 200);
}

/** Polls the deployment until it is final; returns it. */
export async function waitForFinal(s: TestServer, appId: string, id: string, token?: string) {
  return untilStatus(`deployment ${id} to finish`, () => readDeployment(s, appId, id, token));
}

/** Triggers a deployment and waits until it succeeded and the application shows deploymentSuccess. */
export async function deploy(s: TestServer, appId: string, body: Record<string, unknown> = {}, token?: string) {
  const d = await trigger(s, appId, body, token);
  const done = await waitForFinal(s, appId, d.id, token);
  assert.equal(done.status, 'success', `deployment ${d.id} ended ${done.status}`);
  await waitForAppStatus(s, appId, 'deploymentSuccess', token);
  return done;
}

export async function waitForAppStatus(s: TestServer, appId: string, status: string, token?: string) {
  return untilStatus(`application status ${status}`, () => readApp(s, appId, token), { statuses: [status] });
}

export interface LogEntry {
  id: string;
  message: string;
  severity: string;
  tags: Record<string, unknown>;
  attributes: Record<string, unknown>;
}

/** `query` (e.g. `filters=rolling&limit=2`) replaces the default `limit=5000`. */
export async function deploymentLogs(s: TestServer, appId: string, id: string, query = 'limit=5000'): Promise<LogEntry[]> {
  return expectStatus(await s.get(`${deploymentPath(appId, id)}/logs?${query}`), 200);
}

export async function runtimeLogs(s: TestServer, appId: string, query = 'limit=5000'): Promise<LogEntry[]> {
  return expectStatus(await s.get(`/applications/${appId}/runtime-logs?${query}`), 200);
}

/** The operator's simulation controls (progression, faults) and the metrics window. */
export { addFault, setProgression, window } from '../helpers/simulation.js';
