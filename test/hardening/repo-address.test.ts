// Repository addresses a client gives (applications' repo_url): git reads an argument starting with
// `-` as an option (`--upload-pack=<command>` would run a command on the server), and in production
// a local path or file:// would read any repository on the machine, another company's included.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Response, useServer } from '../helpers/server.js';
import { expectError, expectStatus } from '../helpers/util.js';
import { createApp, DEFAULT_CLUSTER } from '../applications/support.js';

const body = (repo_url: string) => ({
  display_name: `repo ${repo_url.length}`,
  cluster_id: DEFAULT_CLUSTER.id,
  source: 'publicGit',
  repo_url,
  default_branch: 'main',
});

describe('repository addresses outside production', () => {
  const s = useServer({ db: 'sqlite' });

  it('an address git would read as an option is refused (400) on create and update, and nothing changes', async () => {
    for (const url of ['--upload-pack=touch${IFS}ran;:x', '-u', 'https://github.com/acme/shop\n--upload-pack=x'])
      expectError(await s.post('/applications', body(url)), 400, /repo_url .* is not a repository address/);
    const a = await createApp(s);
    expectError(await s.patch(`/applications/${a.id}`, { repo_url: '--upload-pack=x' }), 400, /not a repository address/);
    assert.equal(expectStatus(await s.get(`/applications/${a.id}`), 200).repo_url, 'https://github.com/example/shop');
  });

  it('local repositories are accepted (development and tests)', async () => {
    expectStatus(await s.post('/applications', body('file:///srv/git/shop')), 201);
  });
});

describe('repository addresses in production', () => {
  const s = useServer({ db: 'sqlite', flags: { production: true, 'trust-proxy': true } });
  // Production refuses plain HTTP; a trusted proxy says https.
  const call = async (method: string, path: string, payload?: unknown): Promise<Response> => {
    const headers: Record<string, string> = { authorization: `Bearer ${s.token}`, 'x-forwarded-proto': 'https' };
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${s.baseUrl}/v3${path}`, { method, headers, body: payload === undefined ? undefined : JSON.stringify(payload) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
  };

  it('only network addresses are accepted; local paths and file:// are refused (400) and nothing changes', async () => {
    for (const url of ['file:///srv/git/shop', '/srv/git/shop', './shop', 'ext::sh -c touch% /tmp/x'])
      expectError(await call('POST', '/applications', body(url)), 400, /repo_url/);
    const created = [];
    for (const url of ['https://github.com/acme/shop', 'ssh://git@git.example.com/acme/shop.git', 'git@github.com:acme/shop.git']) {
      const r = await call('POST', '/applications', body(url));
      assert.equal(r.status, 201, `${url}: ${r.text}`);
      created.push(r.body);
    }
    const r = await call('PATCH', `/applications/${created[0].id}`, { repo_url: 'file:///srv/git/other' });
    expectError(r, 400, /local repositories are refused in production/);
    assert.equal((await call('GET', `/applications/${created[0].id}`)).body.repo_url, 'https://github.com/acme/shop');
    assert.equal((await call('GET', '/applications?limit=100')).body.total, created.length, 'only the accepted ones were stored');
  });
});
