// Contracts of the git hooks operations. The contract defines none of them: they are this
// project's (decided: served with x-decided), to read and rotate the secret that the providers'
// webhooks are set up with, and to see what each delivery did.
import { Type } from '@sinclair/typebox';
import { DateTime, Nullable, PaginationQuery, Paginated, StringEnum, Uuid } from '../../shared/schemas/common.js';

const WebhookSecret = Type.Object(
  {
    secret: Type.String({ description: 'The secret every provider webhook of the company is set up with (GitLab: the secret token).' }),
    webhook_urls: Type.Object(
      { github: Type.String(), gitlab: Type.String(), bitbucket: Type.String(), gitea: Type.String() },
      { additionalProperties: false, description: 'The payload URL to give each provider (Forgejo: the gitea one).' },
    ),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { additionalProperties: false },
);

const Triggered = Type.Object(
  {
    service_type: StringEnum(['app', 'static-site']),
    service_id: Uuid(),
    action: Type.String({
      description:
        'deployed, skipped, preview, previewAppCreated, previewAppDeployed, previewAppDeleted, refused, or ignored (the service follows the repository but not that branch, or saw the commit already; detail says which)',
    }),
    deployment_id: Nullable(Uuid()),
    detail: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

const GitDelivery = Type.Object(
  {
    id: Uuid(),
    provider: StringEnum(['github', 'gitlab', 'bitbucket', 'gitea', 'poll']),
    event: Type.String(),
    delivery_id: Type.String(),
    result: StringEnum(['deployed', 'ignored', 'duplicate']),
    message: Type.String(),
    triggered: Type.Array(Triggered),
    created_at: DateTime(),
  },
  { additionalProperties: false },
);

/** What the two secret operations share: they answer the secret and the URLs. */
const secretOperation = { tags: ['Git'], success: 200, response: WebhookSecret, errors: [401, 403, 500], decided: true } as const;

export const getGitWebhookSecretContract = {
  ...secretOperation,
  operationId: 'getGitWebhookSecretV3',
  method: 'GET',
  path: '/git/webhook-secret',
  summary: "Get the company's git webhook secret and payload URLs",
} as const;

export const rotateGitWebhookSecretContract = {
  ...secretOperation,
  operationId: 'rotateGitWebhookSecretV3',
  method: 'POST',
  path: '/git/webhook-secret/rotate',
  summary: "Replace the company's git webhook secret",
} as const;

export const listGitDeliveriesContract = {
  operationId: 'listGitDeliveriesV3',
  method: 'GET',
  path: '/git/deliveries',
  summary: 'List the git webhook deliveries (and polled pushes) received, newest first',
  tags: ['Git'],
  querystring: Type.Object({ ...PaginationQuery, service_id: Type.Optional(Uuid()) }),
  success: 200,
  response: Paginated(GitDelivery),
  errors: [400, 401, 403, 500],
  decided: true,
} as const;
