// Deployment hooks: an unguessable URL that triggers a deployment of the application when
// POSTed to, without an API key (for CI systems and git providers).
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { assertCompanyAllows, companyById } from '../../shared/auth/authenticate.js';
import { systemCall, type AppContext, type CallContext } from '../../shared/context.js';
import { ApiError, notFound } from '../../shared/errors.js';
import { bucketFor, headersFor } from '../../shared/ratelimit.js';
import { createDeployment, deploymentView } from './deployments.js';
import { assertMutable } from './service.js';
import { findApp } from './find.js';
import { appByHookToken, setHookToken } from './storage.js';

export const HOOK_PATH = '/hooks/deployments';
const url = (app: AppContext, token: string) => `${app.baseUrl}${HOOK_PATH}/${token}`;
const newToken = () => randomBytes(32).toString('base64url');

export async function getHook(ctx: CallContext, appId: string) {
  const { app } = ctx;
  const a = await findApp(ctx, appId);
  if (!a.hook_token) throw notFound('Deployment hook (it is not enabled)');
  return { url: url(app, a.hook_token) };
}

export async function setHook(ctx: CallContext, appId: string, mode: 'enable' | 'regenerate' | 'disable') {
  const { tx, app } = ctx;
  const a = await findApp(ctx, appId);
  assertMutable(a);
  if (mode === 'disable') {
    if (!a.hook_token) throw notFound('Deployment hook (it is not enabled)');
    await setHookToken(tx, a.id, null, new Date().toISOString());
    return undefined;
  }
  if (mode === 'regenerate' && !a.hook_token) throw notFound('Deployment hook (it is not enabled)');
  const token = mode === 'enable' && a.hook_token ? a.hook_token : newToken();
  await setHookToken(tx, a.id, token, new Date().toISOString());
  return { url: url(app, token) };
}

/** The public hook endpoint. Counted in the deployment tier of the application's company. */
export function registerHookRoute(fastify: FastifyInstance, app: AppContext) {
  const { limiter } = app;
  fastify.post(`${HOOK_PATH}/:token`, async (req, reply) => {
    const { token } = req.params as { token: string };
    if (!/^[\w-]{20,100}$/.test(token)) throw new ApiError(404, 'Unknown deployment hook');
    const a = await appByHookToken(app.database.db, token);
    if (!a) {
      reply.headers(headersFor(await limiter.hit(`ip:${req.ip}`, 'unauthenticated')));
      throw new ApiError(404, 'Unknown deployment hook');
    }
    reply.headers(headersFor(await limiter.hit(bucketFor('deployment', a.company_id, 'triggerDeploymentV3', a.id), 'deployment')));
    // The company states that block API writes block the hook too (it deploys without a key).
    assertCompanyAllows(await companyById(app.database.db, a.company_id), true);
    const body = (req.body ?? {}) as { branch?: unknown };
    const d = await app.database.db.transaction().execute((tx) =>
      createDeployment(systemCall(app, tx, a.company_id), a, {
        trigger: 'hook',
        type: 'automatic',
        initiatedBy: 'deployment-hook',
        branch: typeof body.branch === 'string' ? body.branch : undefined,
      }),
    );
    app.jobs.wake();
    return reply.status(201).send(deploymentView(d));
  });
}
