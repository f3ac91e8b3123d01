import { defineOperation } from '../../shared/http/operation.js';
import * as c from './schemas.js';
import * as svc from './service.js';

// Git providers this server can connect repositories from. Connecting happens on the hosted
// dashboard; here the URLs point at the operator's configured base URL.
const PROVIDERS = [
  { provider: 'github', display_name: 'GitHub' },
  { provider: 'gitlab', display_name: 'GitLab' },
  { provider: 'bitbucket', display_name: 'Bitbucket' },
] as const;

export const operations = [
  defineOperation({
    contract: c.listUsersContract,
    permission: 'COMPANY:READ',
    tier: 'read',
    handler: async (r) => svc.listUsers(r),
  }),
  defineOperation({
    contract: c.listGitProvidersContract,
    permission: null,
    tier: 'read',
    handler: async ({ app }) =>
      PROVIDERS.map((p) => ({
        provider: p.provider,
        display_name: p.display_name,
        connect_url: `${app.baseUrl}/connect/${p.provider}`,
        settings_url: `${app.baseUrl}/settings/git/${p.provider}`,
      })),
  }),
];
