// Webhook endpoints, each with its delivery history and the request and response of each attempt.
// The API has no redeliver operation, so there is no redeliver button.
import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from '../api.js';
import type { paths } from '../schema.js';
import { useCan } from '../auth.js';
import { formatDuration } from '../format.js';
import { ActionButton, Badge, Empty, ErrorBox, Loaded, Secret, Section, useAction, When } from '../ui.js';

type EventType = paths['/webhooks']['post']['requestBody']['content']['application/json']['allowed_events'][number];

/** The event types a webhook may subscribe to, read from the served OpenAPI document. */
function useEventTypes() {
  return useQuery({
    queryKey: ['openapi-event-types'],
    staleTime: Infinity,
    queryFn: async (): Promise<string[]> => {
      const doc = await (await fetch('/v3/openapi.json')).json();
      return doc.paths['/webhooks'].post.requestBody.content['application/json'].schema.properties.allowed_events.items.enum ?? [];
    },
  });
}

export function WebhooksPage() {
  const can = useCan('WEBHOOK:CREATE');
  const list = useQuery({ queryKey: ['webhooks'], queryFn: () => call(api.GET('/webhooks', { params: { query: { limit: 100 } } })) });
  const [open, setOpen] = useState<string | null>(null);
  return (
    <main>
      <div className="page-head">
        <h1>Webhooks</h1>
      </div>
      {can ? <NewWebhook /> : null}
      <Loaded q={list} label="webhooks">
        {(d) =>
          d.data.length ? (
            d.data.map((w) => (
              <Section
                key={w.id}
                title={w.endpoint}
                id={`webhook-${w.id}`}
                actions={<WebhookActions w={w} open={open === w.id} onOpen={() => setOpen(open === w.id ? null : w.id)} />}
              >
                <p className="muted small">
                  {w.description ? `${w.description} · ` : ''}
                  {w.allowed_events.join(', ')}
                </p>
                <p>
                  <Badge status={w.is_enabled ? 'enabled' : 'disabled'} /> Signing secret: <Secret value={w.secret} label="signing secret" />
                </p>
                {open === w.id ? <Deliveries id={w.id} /> : null}
              </Section>
            ))
          ) : (
            <Empty>No webhooks yet.</Empty>
          )
        }
      </Loaded>
    </main>
  );
}

function WebhookActions({ w, open, onOpen }: { w: { id: string; is_enabled: boolean }; open: boolean; onOpen: () => void }) {
  const canUpdate = useCan('WEBHOOK:UPDATE', w.id);
  const canDelete = useCan('WEBHOOK:DELETE', w.id);
  const path = { params: { path: { id: w.id } } };
  const toggle = useAction(() => call(api.POST('/webhooks/{id}/toggle', path)), [['webhooks']]);
  const roll = useAction(() => call(api.POST('/webhooks/{id}/roll-secret', { ...path, body: { expire_in_hours: 1 } })), [['webhooks']]);
  const remove = useAction(() => call(api.DELETE('/webhooks/{id}', path)), [['webhooks']]);
  return (
    <>
      <button type="button" aria-expanded={open} onClick={onOpen}>
        {open ? 'Hide deliveries' : 'Deliveries'}
      </button>
      {canUpdate ? <ActionButton label={w.is_enabled ? 'Disable' : 'Enable'} run={() => toggle.mutate()} pending={toggle.isPending} /> : null}
      {canUpdate ? (
        <ActionButton
          label="Roll secret"
          run={() => roll.mutate()}
          pending={roll.isPending}
          confirm="Roll the signing secret? The old one stays valid for an hour."
        />
      ) : null}
      {canDelete ? <ActionButton label="Delete" danger run={() => remove.mutate()} pending={remove.isPending} confirm="Delete this webhook?" /> : null}
      <ErrorBox error={toggle.error ?? roll.error ?? remove.error} />
    </>
  );
}

function NewWebhook() {
  const events = useEventTypes();
  const [endpoint, setEndpoint] = useState('');
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const create = useAction(
    () => call(api.POST('/webhooks', { body: { endpoint, allowed_events: [...chosen] as EventType[] } })),
    [['webhooks']],
    () => {
      setEndpoint('');
      setChosen(new Set());
    },
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <form className="card" onSubmit={submit} aria-label="New webhook">
      <h2>New webhook</h2>
      <label htmlFor="wh-endpoint">Endpoint URL</label>
      <input id="wh-endpoint" type="url" value={endpoint} onChange={(e) => setEndpoint(e.target.value)} required placeholder="https://example.com/hooks" />
      <fieldset>
        <legend>Events</legend>
        <Loaded q={events} label="event types">
          {(list) => (
            <div className="checks">
              {list.map((t) => (
                <label key={t} className="inline">
                  <input
                    type="checkbox"
                    checked={chosen.has(t)}
                    onChange={(e) => {
                      const next = new Set(chosen);
                      if (e.target.checked) next.add(t);
                      else next.delete(t);
                      setChosen(next);
                    }}
                  />{' '}
                  {t}
                </label>
              ))}
            </div>
          )}
        </Loaded>
      </fieldset>
      <button type="submit" className="primary" data-write disabled={create.isPending || !chosen.size}>
        Create webhook
      </button>
      <ErrorBox error={create.error} />
    </form>
  );
}

function Deliveries({ id }: { id: string }) {
  const list = useQuery({
    queryKey: ['deliveries', id],
    queryFn: () => call(api.GET('/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: 50 } } })),
    refetchInterval: 3_000,
  });
  return (
    <div data-deliveries={id}>
      <h3>Deliveries</h3>
      <Loaded q={list} label="deliveries">
        {(d) =>
          d.data.length ? (
            <ul className="rows">
              {d.data.map((x) => (
                <li key={x.id} className="row col" data-delivery={x.id}>
                  <details>
                    <summary>
                      <Badge status={x.status.toLowerCase() === 'success' ? 'delivered' : x.status.toLowerCase()} /> {x.event_type}{' '}
                      <span className="muted small">
                        {x.response_status ?? '—'} · {x.response_time_ms == null ? '—' : formatDuration(x.response_time_ms)} ·{' '}
                        <When iso={x.sent_at ?? x.created_at} />
                      </span>
                    </summary>
                    <h4>Request</h4>
                    <pre className="body">{pretty(x.payload)}</pre>
                    <h4>Response {x.response_status ?? ''}</h4>
                    <pre className="body">{x.response ?? '(no response)'}</pre>
                  </details>
                </li>
              ))}
            </ul>
          ) : (
            <Empty>No deliveries yet.</Empty>
          )
        }
      </Loaded>
    </div>
  );
}

function pretty(s: string | null | undefined) {
  if (!s) return '(empty)';
  try {
    return JSON.stringify(JSON.parse(s), null, 2);
  } catch {
    return s;
  }
}
