// The git webhook deliveries (and polled pushes) that concerned one service: what each push or
// pull request did, or why it did nothing (docs/deploy-on-push.md), and how to connect a
// repository (the company's payload URLs and secret, for WEBHOOK:UPDATE, which may read and rotate
// it). Shown on the application and static site pages to readers with WEBHOOK:READ. Deliveries that fail their
// signature are refused without a record, so they never show here. A poll that cannot reach the
// repository shows as one `error` delivery (git's answer), and one `recovered` when it can again.
// Beside it, "Repository access": the company's access tokens of private repositories (listed
// without the token, which the API never answers; set and deleted with WEBHOOK:UPDATE).
import { Fragment, useRef, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from './api.js';
import { useCan } from './auth.js';
import { ActionButton, CopyButton, ErrorBox, Loaded, Rows, Secret, Section, submitWith, useAction, When } from './ui.js';

/** A delivery's result in words (the API's value stays in data-status). */
const RESULTS: Record<string, { words: string; tone: string }> = {
  deployed: { words: 'Deployed', tone: 'ok' },
  ignored: { words: 'Nothing to do', tone: 'muted' },
  duplicate: { words: 'Duplicate', tone: 'muted' },
  error: { words: 'Poll failed', tone: 'bad' },
  recovered: { words: 'Poll recovered', tone: 'ok' },
};
const ACTIONS: Record<string, string> = {
  deployed: 'deployed',
  skipped: 'skipped (deploy paths)',
  preview: 'preview built',
  previewAppCreated: 'preview app created',
  previewAppDeployed: 'preview app deployed',
  previewAppDeleted: 'preview app deleted',
  refused: 'refused',
  ignored: 'not deployed',
  pollFailed: 'repository unreachable',
  pollRecovered: 'repository reachable again',
};
const PROVIDERS = [
  ['github', 'GitHub'],
  ['gitlab', 'GitLab'],
  ['bitbucket', 'Bitbucket'],
  ['gitea', 'Gitea / Forgejo'],
] as const;
const SECRET_KEY = ['git-webhook-secret'];
const CREDENTIALS_KEY = ['git-credentials'];

export function GitDeliveries({ serviceId }: { serviceId: string }) {
  const can = useCan('WEBHOOK:READ');
  const canConnect = useCan('WEBHOOK:UPDATE');
  const list = useQuery({
    queryKey: ['git-deliveries', serviceId],
    queryFn: () => call(api.GET('/git/deliveries', { params: { query: { service_id: serviceId, limit: 10 } } })),
    refetchInterval: 15_000,
    enabled: can,
  });
  if (!can) return null;
  return (
    <>
      <Section title="Deploy on push" id="git-deliveries">
        {canConnect ? <Connect /> : null}
        <h3 className="small">Latest deliveries</h3>
        <Rows
          q={list}
          label="git deliveries"
          empty="No push or pull request has concerned this service yet: connect the repository's webhook above, or wait for the next poll."
        >
          {(d) => {
            const r = RESULTS[d.result] ?? { words: d.result, tone: 'neutral' };
            const mine = d.triggered.filter((t) => t.service_id === serviceId);
            return (
              <li key={d.id} data-delivery={d.delivery_id}>
                <span className={`badge badge-${r.tone}`} data-status={d.result}>
                  {r.words}
                </span>{' '}
                <strong>{d.provider === 'poll' ? 'poll' : d.provider}</strong> {d.event} <When iso={d.created_at} />
                <div className="muted small">
                  {mine
                    .map(
                      (t) =>
                        `${ACTIONS[t.action] ?? t.action}${t.deployment_id ? ` (deployment ${t.deployment_id.slice(0, 8)})` : ''}${t.detail ? `: ${t.detail}` : ''}`,
                    )
                    .join('; ') || d.message}
                </div>
                <div className="muted small">
                  Delivery <code className="wrap">{d.delivery_id}</code>
                </div>
              </li>
            );
          }}
        </Rows>
      </Section>
      <RepositoryAccess canWrite={canConnect} />
    </>
  );
}

/**
 * The company's access tokens of private repositories: the list (address, user name, dates; never
 * the token), and for WEBHOOK:UPDATE a form that sets or replaces one (the token typed in a
 * password field, sent once and cleared) and a delete button per row.
 */
function RepositoryAccess({ canWrite }: { canWrite: boolean }) {
  const list = useQuery({ queryKey: CREDENTIALS_KEY, queryFn: () => call(api.GET('/git/credentials', { params: { query: { limit: 100 } } })) });
  const [repoUrl, setRepoUrl] = useState('');
  const [username, setUsername] = useState('');
  const [token, setToken] = useState('');
  const tokenField = useRef<HTMLInputElement>(null);
  const save = useAction(
    (body: { repo_url: string; username?: string; token: string }) => call(api.PUT('/git/credentials', { body })),
    [CREDENTIALS_KEY],
    () => {
      setRepoUrl('');
      setUsername('');
      setToken('');
    },
  );
  const remove = useAction((id: string) => call(api.DELETE('/git/credentials/{id}', { params: { path: { id } } })), [CREDENTIALS_KEY]);
  return (
    <Section title="Repository access" id="repo-access">
      <p className="hint">
        Access tokens of the company&apos;s private repositories (http or https), one per repository, used by every build, poll and fetch of it. A token is sent
        once and never shown again: replace it to change it.
      </p>
      <Rows q={list} label="repository access tokens" empty="No repository access token: public repositories need none.">
        {(c) => (
          <li key={c.id} data-credential={c.repo_url}>
            <code className="wrap">{c.repo_url}</code> <span className="muted small">as {c.username}</span>
            <div className="muted small">
              Added <When iso={c.created_at} />, changed <When iso={c.updated_at} />
            </div>
            {canWrite ? (
              <div className="actions">
                <button
                  type="button"
                  data-write
                  aria-label={`Replace token of ${c.repo_url}`}
                  onClick={() => {
                    setRepoUrl(c.repo_url);
                    setUsername(c.username);
                    setToken('');
                    tokenField.current?.focus();
                  }}
                >
                  Replace token
                </button>{' '}
                <button
                  type="button"
                  className="danger"
                  data-write
                  aria-label={`Delete token of ${c.repo_url}`}
                  disabled={remove.isPending}
                  onClick={() => {
                    if (window.confirm(`Builds and polls of ${c.repo_url} will go without a token. Delete it?`)) remove.mutate(c.id);
                  }}
                >
                  Delete
                </button>
              </div>
            ) : null}
          </li>
        )}
      </Rows>
      <ErrorBox error={remove.error} />
      {canWrite ? (
        <form
          className="settings"
          aria-label="Set a repository access token"
          onSubmit={submitWith(() => save.mutate({ repo_url: repoUrl.trim(), token, ...(username.trim() ? { username: username.trim() } : {}) }))}
        >
          <fieldset>
            <legend>Add or replace a token</legend>
            <label htmlFor="repo-access-url">Repository address</label>
            <input
              id="repo-access-url"
              type="url"
              required
              placeholder="https://github.com/acme/shop.git"
              value={repoUrl}
              onChange={(e) => setRepoUrl(e.target.value)}
            />
            <label htmlFor="repo-access-user">User name (x-access-token when empty; GitLab: oauth2; Bitbucket: x-token-auth)</label>
            <input id="repo-access-user" autoComplete="off" value={username} onChange={(e) => setUsername(e.target.value)} />
            <label htmlFor="repo-access-token">Access token</label>
            <input
              id="repo-access-token"
              ref={tokenField}
              type="password"
              autoComplete="new-password"
              required
              value={token}
              onChange={(e) => setToken(e.target.value)}
            />
          </fieldset>
          <button type="submit" data-write disabled={save.isPending}>
            Save token
          </button>
          <ErrorBox error={save.error} />
        </form>
      ) : null}
    </Section>
  );
}

/** The payload URLs and the secret, read when opened (the first read makes the secret). */
function Connect() {
  const [open, setOpen] = useState(false);
  const secret = useQuery({ queryKey: SECRET_KEY, queryFn: () => call(api.GET('/git/webhook-secret')), enabled: open });
  const rotate = useAction(() => call(api.POST('/git/webhook-secret/rotate')), [SECRET_KEY]);
  return (
    <details onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Connect a repository</summary>
      {open ? (
        <Loaded q={secret} label="the webhook secret">
          {(s) => (
            <>
              <p className="muted small">
                Add a webhook to the repository with the payload URL of its provider and this secret (GitLab: the secret token). Pushes and pull requests then
                deploy without polling. The secret and URLs are the company&apos;s, shared by all its services.
              </p>
              <dl className="facts">
                {PROVIDERS.map(([key, name]) => (
                  <Fragment key={key}>
                    <dt>{name} payload URL</dt>
                    <dd>
                      <code className="wrap" data-url={key}>
                        {s.webhook_urls[key]}
                      </code>{' '}
                      <CopyButton text={s.webhook_urls[key]} label={`the ${name} payload URL`} />
                    </dd>
                  </Fragment>
                ))}
                <dt>Secret</dt>
                <dd>
                  {/* token-line: the secret breaks anywhere on a narrow screen. */}
                  <span className="token-line">
                    <Secret value={s.secret} label="the webhook secret" />
                  </span>{' '}
                  <CopyButton text={s.secret} label="the webhook secret" />
                </dd>
                <dt>Changed</dt>
                <dd>
                  <When iso={s.updated_at} />
                </dd>
              </dl>
              <ActionButton
                label="Rotate secret"
                run={() => rotate.mutate()}
                pending={rotate.isPending}
                confirm="Deliveries signed with the current secret will be refused: every repository's webhook must then be given the new one. Rotate?"
                danger
              />
              <ErrorBox error={rotate.error} />
            </>
          )}
        </Loaded>
      ) : null}
    </details>
  );
}
