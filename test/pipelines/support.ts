// Helpers of the pipeline suites: pipelines, stages and placements over HTTP. Applications and
// deployments come from the applications suites' helpers.
import type { TestServer } from '../helpers/server.js';
import { expectStatus } from '../helpers/util.js';

export { IMMEDIATE_ENV, createApp, deploy, deploymentLogs, deploymentPath, waitForFinal } from '../applications/support.js';

export const pipelinePath = (id: string) => `/pipelines/${id}`;
export const stagePath = (id: string, stageId: string) => `/pipelines/${id}/stages/${stageId}`;

/** Creates a pipeline (201) with its default stages Dev and Production. */
export async function createPipeline(s: TestServer, body: Record<string, unknown> = {}, token?: string) {
  return expectStatus(await s.post('/pipelines', { display_name: 'Shop pipeline', type: 'trunk', ...body }, { token }), 201);
}

/** GET of the pipeline (its stages with their settings). */
export async function getPipeline(s: TestServer, id: string, token?: string) {
  return expectStatus(await s.get(pipelinePath(id), { token }), 200);
}

/** Adds the application to the stage (200). */
export async function addToStage(s: TestServer, id: string, stageId: string, appId: string, token?: string) {
  return expectStatus(await s.post(`${stagePath(id, stageId)}/apps`, { app_id: appId }, { token }), 200);
}

/** The stage of the pipeline with this type or display name. */
export function stageNamed(p: { stages: { id: string; display_name: string; type: string }[] }, name: string) {
  const st = p.stages.find((x) => x.display_name === name || x.type === name);
  if (!st) throw new Error(`no stage ${name} in ${JSON.stringify(p.stages)}`);
  return st;
}
