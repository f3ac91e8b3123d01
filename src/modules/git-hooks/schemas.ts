// Contracts of the git hooks operations. The contract defines none of them: they are this
// project's (decided: served with x-decided), to read and rotate the secret that the providers'
// webhooks are set up with, to see what each delivery did, and to set the access tokens of private
// repositories (write-only).
import { Type, type Static } from '@sinclair/typebox';
import { DateTime, IdParams, Nullable, PageQuery, PaginationQuery, Paginated, StringEnum, Uuid } from '../../shared/schemas/common.js';

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
        "deployed, skipped, preview, previewAppCreated, previewAppDeployed, previewAppDeleted, refused, or ignored (the service follows the repository but not that branch, or saw the commit already; detail says which); for a poll that cannot reach the repository, pollFailed (detail: git's answer) and then pollRecovered",
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
    result: StringEnum(['deployed', 'ignored', 'duplicate', 'error', 'recovered'], {
      description:
        "deployed (it triggered something), ignored (nothing to do: the message says why), duplicate (a delivery id received before); for polls: error (the repository cannot be listed or fetched: git's answer, recorded at the first failure only) and recovered (it can again)",
    }),
    message: Type.String(),
    triggered: Type.Array(Triggered),
    created_at: DateTime(),
  },
  { additionalProperties: false },
);

/** What the two secret operations share: they answer the secret and the URLs. */
const secretOperation = { tags: ['Git'], success: 200, response: WebhookSecret, errors: [401, 403, 500], decided: true } as const;

/** What a delivery did (the deliveries list's `result`). */
export type DeliveryResult = Static<typeof GitDelivery>['result'];

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

const decided = { 'x-decided': true } as const;

const GitCredential = Type.Object(
  {
    id: Uuid(),
    repo_url: Type.String({ description: 'The repository the token opens (one credential per repository, however its address is written).' }),
    username: Type.String({ description: 'The user name the token is sent with (HTTP basic authentication).' }),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { ...decided, additionalProperties: false, description: 'An access token of a private repository; the token itself is never answered.' },
);

export const setGitCredentialContract = {
  operationId: 'setGitCredentialV3',
  method: 'PUT',
  path: '/git/credentials',
  summary: "Set the access token of a private repository (replaces the repository's token)",
  tags: ['Git'],
  body: Type.Object(
    {
      repo_url: Type.String({ minLength: 1, maxLength: 2048, description: 'The http(s) address of the repository, as the services name it.' }),
      username: Type.Optional(
        Type.String({
          maxLength: 255,
          description: 'The user name sent with the token: `x-access-token` when omitted (GitHub); `oauth2` for GitLab; `x-token-auth` for Bitbucket.',
        }),
      ),
      token: Type.String({ minLength: 1, maxLength: 4096, description: 'The access token (write-only: sealed at rest, never answered).' }),
    },
    { ...decided, additionalProperties: false },
  ),
  success: 200,
  response: GitCredential,
  errors: [400, 401, 403, 500],
  decided: true,
} as const;

export const listGitCredentialsContract = {
  operationId: 'listGitCredentialsV3',
  method: 'GET',
  path: '/git/credentials',
  summary: "List the company's repository access tokens (without the tokens)",
  tags: ['Git'],
  querystring: PageQuery,
  success: 200,
  response: Paginated(GitCredential),
  errors: [400, 401, 403, 500],
  decided: true,
} as const;

export const deleteGitCredentialContract = {
  operationId: 'deleteGitCredentialV3',
  method: 'DELETE',
  path: '/git/credentials/{id}',
  summary: 'Delete a repository access token',
  tags: ['Git'],
  params: IdParams,
  success: 204,
  errors: [401, 403, 404, 500],
  decided: true,
} as const;
