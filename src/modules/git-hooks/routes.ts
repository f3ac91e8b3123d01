// Git provider webhooks and polling (deploy on push): the decided operations on the secret, the
// deliveries and the access tokens of private repositories, the public webhook URL, the poll job,
// and the port that gives builds their access to a private repository.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { assertCompanyAllows, companyById } from '../../shared/auth/authenticate.js';
import type { AppContext } from '../../shared/context.js';
import { ApiError } from '../../shared/errors.js';
import { defineOperation } from '../../shared/http/operation.js';
import { pageOf } from '../../shared/pagination.js';
import { headersFor } from '../../shared/ratelimit.js';
import { armPoll, pollJob, POLL_JOB, pollSeconds } from './poll.js';
import { parse, PROVIDERS, type Provider } from './providers.js';
import * as credentials from './credentials.js';
import * as c from './schemas.js';
import * as svc from './service.js';
export { migrations, tables } from './storage.js';

export const operations = [
  defineOperation({
    contract: c.getGitWebhookSecretContract,
    // The secret signs deliveries that deploy: reading it is for those who may replace it, not for
    // every reader of the deliveries (a Company Viewer could otherwise forge pushes).
    permission: 'WEBHOOK:UPDATE',
    tier: 'read',
    handler: async (r) => svc.getSecret(r),
  }),
  defineOperation({
    contract: c.rotateGitWebhookSecretContract,
    permission: 'WEBHOOK:UPDATE',
    tier: 'general_write',
    handler: async (r) => svc.rotateSecret(r),
  }),
  defineOperation({
    contract: c.listGitDeliveriesContract,
    permission: 'WEBHOOK:READ',
    tier: 'read',
    pure: true,
    handler: async (r) => svc.listDeliveries(r, r.query.service_id, pageOf(r.query)),
  }),
  // Tokens that open private repositories: set and removed by those who manage the deploy-on-push
  // settings; read back (without the token) by those who see the deliveries.
  defineOperation({
    contract: c.setGitCredentialContract,
    permission: 'WEBHOOK:UPDATE',
    tier: 'general_write',
    handler: async (r) => credentials.setCredential(r, r.body),
  }),
  defineOperation({
    contract: c.listGitCredentialsContract,
    permission: 'WEBHOOK:READ',
    tier: 'read',
    pure: true,
    handler: async (r) => credentials.listCredentials(r, pageOf(r.query)),
  }),
  defineOperation({
    contract: c.deleteGitCredentialContract,
    permission: 'WEBHOOK:UPDATE',
    tier: 'general_write',
    handler: async (r) => credentials.removeCredential(r, r.params.id),
  }),
];

export function setup(app: AppContext): void {
  pollSeconds(app); // a bad setting stops the start
  app.jobs.register(POLL_JOB, pollJob(app));
  app.ports.gitAccess = { env: (ctx, repoUrl) => credentials.accessFor(app, ctx.tx, ctx.companyId, repoUrl) };
}

export const start = (app: AppContext) => armPoll(app);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The JSON of a delivery: the body itself, or GitHub's form encoding (`payload=<json>`). */
function payloadOf(req: FastifyRequest, raw: Buffer): unknown {
  const type = String(req.headers['content-type'] ?? '');
  const text = type.includes('application/x-www-form-urlencoded') ? (new URLSearchParams(raw.toString('utf8')).get('payload') ?? '') : raw.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, 'The delivery body is not JSON');
  }
}

/**
 * POST /hooks/git/{provider}/{company_id}: a provider's webhook delivery. The body is read raw
 * (its signature is over the bytes sent), up to the server's body limit (413 beyond). A delivery
 * that does not prove the company's secret is 401 and changes nothing; a verified one is answered
 * 200 with what it did (a repeated delivery id: `duplicate`, nothing done again).
 */
export function http(fastify: FastifyInstance, app: AppContext): void {
  void fastify.register(async (f) => {
    f.removeAllContentTypeParsers();
    f.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: app.config.bodyLimit }, (_req, body, done) => done(null, body));
    f.post(`${svc.HOOK_PATH}/:provider/:company`, async (req, reply) => {
      const { provider, company } = req.params as { provider: string; company: string };
      if (!(PROVIDERS as readonly string[]).includes(provider) || !UUID.test(company)) throw new ApiError(404, 'Unknown git webhook URL');
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const secret = await svc.companySecret(app, company);
      const read = secret === undefined ? undefined : svc.authenticate(provider as Provider, req.headers, raw, secret);
      if (!read) {
        // Guessing is counted like any unauthenticated request of this address.
        reply.headers(headersFor(await app.limiter.hit(`ip:${req.ip}`, 'unauthenticated')));
        throw new ApiError(401, 'The delivery is not signed with this company’s git webhook secret (GET /v3/git/webhook-secret)');
      }
      // The company states that block API writes block deployments on push too.
      assertCompanyAllows(await companyById(app.database.db, company), true);
      const events = parse(provider as Provider, read.event, payloadOf(req, raw));
      return reply
        .status(200)
        .send(await svc.receive(app, company, { provider: provider as Provider, event: read.event, deliveryId: read.deliveryId, events }));
    });
  });
}
