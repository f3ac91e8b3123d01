// API keys: create (the token is shown once, with a copy button), roles and scoped capabilities,
// rotate (the new token shown once), enable / disable, delete.
import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from '../api.js';
import { useCan } from '../auth.js';
import { ActionButton, Badge, CopyButton, Empty, ErrorBox, Loaded, Section, useAction, When } from '../ui.js';

interface Shown {
  name: string;
  token: string;
}

export function ApiKeysPage() {
  const canCreate = useCan('API_KEY:CREATE');
  const list = useQuery({ queryKey: ['api-keys'], queryFn: () => call(api.GET('/api-keys', { params: { query: { limit: 100 } } })) });
  const [shown, setShown] = useState<Shown | null>(null);
  return (
    <main>
      <div className="page-head">
        <h1>API keys</h1>
      </div>
      {shown ? <TokenOnce shown={shown} onClose={() => setShown(null)} /> : null}
      {canCreate ? <NewKey onCreated={setShown} /> : null}
      <Section title="Keys" id="keys">
        <Loaded q={list} label="keys">
          {(d) =>
            d.data.length ? (
              <ul className="rows">
                {d.data.map((k) => (
                  <KeyRow key={k.id} k={k} onToken={setShown} />
                ))}
              </ul>
            ) : (
              <Empty>No keys.</Empty>
            )
          }
        </Loaded>
      </Section>
    </main>
  );
}

function TokenOnce({ shown, onClose }: { shown: Shown; onClose: () => void }) {
  return (
    <div className="card notice" role="status" data-token-once>
      <h2>Token for “{shown.name}”</h2>
      <p>This is the only time the token is shown. Copy it now.</p>
      <p className="token-line">
        <code data-token>{shown.token}</code> <CopyButton text={shown.token} />
      </p>
      <button type="button" onClick={onClose}>
        Done
      </button>
    </div>
  );
}

interface Key {
  id: string;
  name: string;
  is_enabled: boolean;
  masked_token: string;
  roles: { id: string; name: string }[];
  capabilities: { permission: string; id_resource: string | null }[];
  last_used_at: string | null;
  expired_at: string | null;
}

function KeyRow({ k, onToken }: { k: Key; onToken: (s: Shown) => void }) {
  const canUpdate = useCan('API_KEY:UPDATE', k.id);
  const canDelete = useCan('API_KEY:DELETE', k.id);
  const path = { params: { path: { id: k.id } } };
  const rotate = useAction(
    () => call(api.POST('/api-keys/{id}/rotate', { ...path, body: { old_token_ttl_hours: 0 } })),
    [['api-keys']],
    (r) => onToken({ name: r.name, token: r.token }),
  );
  const toggle = useAction(() => call(api.POST('/api-keys/{id}/toggle', path)), [['api-keys']]);
  const remove = useAction(() => call(api.DELETE('/api-keys/{id}', path)), [['api-keys']]);
  return (
    <li className="row col" data-key={k.name}>
      <div className="row-line">
        <strong>{k.name}</strong>
        <Badge status={k.is_enabled ? 'enabled' : 'disabled'} />
        <code className="muted">{k.masked_token}</code>
        <span className="muted small">
          last used <When iso={k.last_used_at} />
        </span>
        <span className="actions">
          {canUpdate ? (
            <ActionButton
              label="Rotate"
              run={() => rotate.mutate()}
              pending={rotate.isPending}
              confirm={`Rotate ${k.name}? The old token stops working now.`}
            />
          ) : null}
          {canUpdate ? <ActionButton label={k.is_enabled ? 'Disable' : 'Enable'} run={() => toggle.mutate()} pending={toggle.isPending} /> : null}
          {canDelete ? <ActionButton label="Delete" danger run={() => remove.mutate()} pending={remove.isPending} confirm={`Delete ${k.name}?`} /> : null}
        </span>
      </div>
      <div className="muted small">
        {k.roles.map((r) => r.name).join(', ') || 'no role'}
        {k.capabilities.length ? ` · ${k.capabilities.map((c) => (c.id_resource ? `${c.permission} on ${c.id_resource}` : c.permission)).join(', ')}` : ''}
      </div>
      <ErrorBox error={rotate.error ?? toggle.error ?? remove.error} />
    </li>
  );
}

function NewKey({ onCreated }: { onCreated: (s: Shown) => void }) {
  const roles = useQuery({ queryKey: ['rbac-roles'], queryFn: () => call(api.GET('/resources/rbac/api-key-roles')), staleTime: Infinity });
  const perms = useQuery({ queryKey: ['rbac-permissions'], queryFn: () => call(api.GET('/resources/rbac/api-key-permissions')), staleTime: Infinity });
  const [name, setName] = useState('');
  const [role, setRole] = useState('');
  const [caps, setCaps] = useState<{ permission: string; id_resource: string }[]>([]);
  const create = useAction(
    () =>
      call(
        api.POST('/api-keys', {
          body: {
            name,
            role_ids: role ? [role] : [],
            capabilities: caps.filter((c) => c.permission).map((c) => ({ permission: c.permission, id_resource: c.id_resource || undefined })),
          },
        }),
      ),
    [['api-keys']],
    (r) => {
      onCreated({ name: r.name, token: r.token });
      setName('');
      setCaps([]);
    },
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const permNames = (perms.data ?? []).map((p) => p.name);
  return (
    <form className="card" onSubmit={submit} aria-label="New API key">
      <h2>New API key</h2>
      <label htmlFor="key-name">Name</label>
      <input id="key-name" value={name} onChange={(e) => setName(e.target.value)} required />
      <label htmlFor="key-role">Role</label>
      <select id="key-role" value={role} onChange={(e) => setRole(e.target.value)}>
        <option value="">No role (capabilities only)</option>
        {(roles.data ?? []).map((r) => (
          <option key={r.id} value={r.id}>
            {r.name}
          </option>
        ))}
      </select>
      <fieldset>
        <legend>Capabilities</legend>
        {caps.map((c, i) => (
          <div key={i} className="inline-form">
            <label>
              Permission{' '}
              <select value={c.permission} onChange={(e) => setCaps(caps.map((x, j) => (j === i ? { ...x, permission: e.target.value } : x)))}>
                <option value="">—</option>
                {permNames.map((p) => (
                  <option key={p}>{p}</option>
                ))}
              </select>
            </label>
            <label>
              Resource id (optional){' '}
              <input value={c.id_resource} onChange={(e) => setCaps(caps.map((x, j) => (j === i ? { ...x, id_resource: e.target.value } : x)))} />
            </label>
            <button type="button" onClick={() => setCaps(caps.filter((_, j) => j !== i))}>
              Remove
            </button>
          </div>
        ))}
        <button type="button" onClick={() => setCaps([...caps, { permission: '', id_resource: '' }])}>
          Add capability
        </button>
      </fieldset>
      <button type="submit" className="primary" data-write disabled={create.isPending}>
        Create key
      </button>
      <ErrorBox error={create.error ?? roles.error} />
    </form>
  );
}
