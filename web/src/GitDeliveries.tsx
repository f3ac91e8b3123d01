// The git webhook deliveries (and polled pushes) that concerned one service: what each push or
// pull request did, or why it did nothing (docs/deploy-on-push.md), and how to connect a
// repository (the company's payload URLs and secret, for WEBHOOK:UPDATE, which may read and rotate
// it). Shown on the application and static site pages to readers with WEBHOOK:READ. Deliveries that fail their
// signature are refused without a record, so they never show here.
import { Fragment, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from './api.js';
import { useCan } from './auth.js';
import { ActionButton, CopyButton, ErrorBox, Loaded, Rows, Secret, Section, useAction, When } from './ui.js';

/** A delivery's result in words (the API's value stays in data-status). */
const RESULTS: Record<string, { words: string; tone: string }> = {
  deployed: { words: 'Deployed', tone: 'ok' },
  ignored: { words: 'Nothing to do', tone: 'muted' },
  duplicate: { words: 'Duplicate', tone: 'muted' },
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
};
const PROVIDERS = [
  ['github', 'GitHub'],
  ['gitlab', 'GitLab'],
  ['bitbucket', 'Bitbucket'],
  ['gitea', 'Gitea / Forgejo'],
] as const;
const SECRET_KEY = ['git-webhook-secret'];

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
