// Helpers of the static site suites: sites and deployments over HTTP, polling, and the operator's
// simulation controls for static site deployments (operation `static_site_deployment`).
import assert from 'node:assert/strict';
import type { TestServer } from '../helpers/server.js';
import { DEPLOYMENT_FINAL, untilStatus } from '../helpers/status.js';
import { expectStatus, uniqueName, waitFor } from '../helpers/util.js';

/** Deployments and deletions finish as soon as the job engine runs them (tests switch per test). */
export const IMMEDIATE_ENV = { SLIPWAY_SIM_PROGRESSION: 'static_site_deployment=immediate,static_site_delete=immediate', SLIPWAY_JOB_POLL_MS: '20' };

export const OP = 'static_site_deployment';

export const sitePath = (id: string) => `/static-sites/${id}`;
export const deploymentsPath = (id: string) => `/static-sites/${id}/deployments`;
export const deploymentPath = (id: string, d: string) => `/static-sites/${id}/deployments/${d}`;

/** Creates a static site from a public GitHub repository (201); its initial production deployment is queued. */
export async function createSite(s: TestServer, extra: Record<string, unknown> = {}, token?: string) {
  const body = { display_name: uniqueName('site'), repo_url: 'https://github.com/acme/site', default_branch: 'main', ...extra };
  return expectStatus(await s.post('/static-sites', body, { token }), 201);
}

/** Triggers a deployment (201 with the new deployment). */
export async function trigger(s: TestServer, siteId: string, body: Record<string, unknown> = {}, token?: string) {
  return expectStatus(await s.post(deploymentsPath(siteId), body, { token }), 201);
}

export async function readDeployment(s: TestServer, siteId: string, id: string, token?: string) {
  return expectStatus(await s.get(deploymentPath(siteId, id), { token }), 200);
}

export async function readSite(s: TestServer, siteId: string, token?: string) {
  return expectStatus(await s.get(sitePath(siteId), { token }), 200);
}

/** The site's deployments, newest first (one page of up to 100). */
export async function deployments(s: TestServer, siteId: string): Promise<any[]> {
  return expectStatus(await s.get(`${deploymentsPath(siteId)}?limit=100`), 200).data;
}

/** Polls the deployment until it is final; returns it. */
export async function waitForFinal(s: TestServer, siteId: string, id: string) {
  return untilStatus(`deployment ${id} to finish`, () => readDeployment(s, siteId, id));
}

/** Waits until every deployment of the site is final (e.g. the initial one). */
export async function settle(s: TestServer, siteId: string) {
  return waitFor(`deployments of ${siteId} to settle`, async () => {
    const all = await deployments(s, siteId);
    return all.every((d) => DEPLOYMENT_FINAL.has(d.status)) ? all : undefined;
  });
}

/** A site whose initial deployment succeeded. */
export async function deployedSite(s: TestServer, extra: Record<string, unknown> = {}) {
  const site = await createSite(s, extra);
  const [initial] = await settle(s, site.id);
  assert.equal(initial.status, 'success');
  return site;
}

export async function deploymentLogs(
  s: TestServer,
  siteId: string,
  id: string,
  query = 'limit=5000',
): Promise<{ message: string; severity: string; attributes: Record<string, unknown>; tags: Record<string, unknown> }[]> {
  return expectStatus(await s.get(`${deploymentPath(siteId, id)}/logs?${query}`), 200);
}

/** The operator's simulation controls (progression, faults) and the metrics window. */
export { addFault, setProgression, window } from '../helpers/simulation.js';
