// A bucket of object storage: an object browser (folders by `/`, upload with progress, download,
// delete) whose bytes go through URLs the API presigns (POST /object-storage/{id}/presign) on the
// S3 data plane of this origin, so the page never needs the bucket's secret; its keys with rotation
// and a grace period for the old pair, CORS rules, and the public CDN domain with its cache purge.
import { useRef, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from '../api.js';
import { useCan } from '../auth.js';
import { formatBytes } from '../format.js';
import { knownSecret, rememberSecret } from '../bucket-secrets.js';
import { navigate } from '../router.js';
import { ActionButton, CopyButton, ErrorBox, Loaded, Rows, Secret, Section, submitWith, useAction, When } from '../ui.js';

type Bucket = Awaited<ReturnType<typeof getBucket>>;
const getBucket = (id: string) => call(api.GET('/object-storage/{id}', { params: { path: { id } } }));

export function BucketPage({ id }: { id: string }) {
  const bucket = useQuery({ queryKey: ['object-storage', id], queryFn: () => getBucket(id) });
  const canDelete = useCan('OBJECT_STORAGE:DELETE', id);
  const remove = useAction(
    () => call(api.DELETE('/object-storage/{id}', { params: { path: { id } } })),
    [['object-storage'], ['projects']],
    () => navigate('/'),
  );
  return (
    <main>
      <Loaded q={bucket} label="bucket">
        {(b) => (
          <>
            <div className="page-head">
              <h1>{b.display_name}</h1>
              <span className="muted small">
                bucket <code>{b.bucket_name}</code> · {b.location} · {b.jurisdiction}
              </span>
              <div className="actions">
                {canDelete ? (
                  <ActionButton
                    label="Delete bucket"
                    danger
                    run={() => remove.mutate()}
                    pending={remove.isPending}
                    confirm={`Delete ${b.display_name} and every object in it?`}
                  />
                ) : null}
              </div>
            </div>
            <ErrorBox error={remove.error} />
            <Objects id={id} bucket={b} />
            <Keys id={id} bucket={b} />
            <Cdn id={id} bucket={b} />
          </>
        )}
      </Loaded>
      <Cors id={id} />
    </main>
  );
}

type PresignBody = { method: 'GET' | 'PUT' | 'DELETE' | 'HEAD'; key: string; expires_in?: number; content_type?: string };
const presign = (id: string, body: PresignBody) => call(api.POST('/object-storage/{id}/presign', { params: { path: { id } }, body }));

/** PUTs `file` to a presigned URL with the headers it was signed with, reporting the bytes sent so far (fetch cannot report upload progress). */
function upload(url: string, headers: Record<string, string>, file: File, onProgress: (sent: number, total: number) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve();
      else {
        const code = /<Code>([^<]+)<\/Code>/.exec(xhr.responseText)?.[1];
        const message = /<Message>([^<]+)<\/Message>/.exec(xhr.responseText)?.[1];
        reject(new Error(`Upload of ${file.name} failed (${xhr.status}${code ? ` ${code}` : ''})${message ? `: ${message}` : ''}`));
      }
    };
    xhr.onerror = () => reject(new Error(`Upload of ${file.name} failed: network error`));
    xhr.send(file);
  });
}

interface Sending {
  name: string;
  sent: number;
  total: number;
  error?: string;
}

function Objects({ id, bucket }: { id: string; bucket: Bucket }) {
  const can = useCan('OBJECT_STORAGE:UPDATE', id);
  const [prefix, setPrefix] = useState('');
  const [pages, setPages] = useState<(string | null)[]>([null]);
  const [sending, setSending] = useState<Sending[]>([]);
  // Where uploads go: the folder shown unless another is typed (a new one is made by its first object).
  const [folder, setFolder] = useState<string | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const listKey = ['objects', id, prefix, pages.length];
  const list = useQuery({
    queryKey: listKey,
    queryFn: async () => {
      // Every page up to the last "Load more", so an upload or delete refreshes them all.
      const rows = [];
      let cursor: string | undefined;
      for (let i = 0; i < pages.length; i++) {
        const r = await call(api.GET('/object-storage/{id}/objects', { params: { path: { id }, query: { prefix, delimiter: '/', cursor, limit: 100 } } }));
        rows.push(...r.data);
        cursor = r.cursor ?? undefined;
        if (!cursor) return { data: rows, cursor: null };
      }
      return { data: rows, cursor: cursor ?? null };
    },
    // Refreshed while uploads run, so finished ones appear without a reload.
    refetchInterval: sending.some((s) => s.sent < s.total && !s.error) ? 2_000 : 15_000,
  });
  const open = (p: string) => {
    setPrefix(p);
    setFolder(null);
    setPages([null]);
  };
  const remove = useAction(
    (keysToDelete: string[]) => call(api.DELETE('/object-storage/{id}/objects', { params: { path: { id } }, body: { keys: keysToDelete } })),
    [['objects', id]],
  );
  const sendFiles = useAction(
    async (files: File[]) => {
      const into = (folder ?? prefix).replace(/^\/+/, '');
      const dir = into && !into.endsWith('/') ? `${into}/` : into;
      setSending(files.map((f) => ({ name: dir + f.name, sent: 0, total: f.size })));
      const update = (i: number, patch: Partial<Sending>) => setSending((all) => all.map((s, j) => (j === i ? { ...s, ...patch } : s)));
      await Promise.all(
        files.map(async (f, i) => {
          try {
            // The file's type is signed with the URL, so the object keeps it.
            const signed = await presign(id, { method: 'PUT', key: dir + f.name, expires_in: 3600, ...(f.type ? { content_type: f.type } : {}) });
            await upload(signed.url, signed.headers, f, (sent, total) => update(i, { sent, total }));
            update(i, { sent: f.size, total: f.size });
          } catch (e) {
            update(i, { error: (e as Error).message });
          }
        }),
      );
      if (fileInput.current) fileInput.current.value = '';
    },
    [['objects', id]],
  );
  const download = useAction(async (key: string) => {
    const name = key.slice(key.lastIndexOf('/') + 1);
    // Same origin, so the `download` attribute names the file.
    const { url } = await presign(id, { method: 'GET', key, expires_in: 300 });
    const a = document.createElement('a');
    a.href = url;
    a.download = name;
    document.body.append(a);
    a.click();
    a.remove();
  });
  const crumbs = prefix.split('/').filter(Boolean);
  return (
    <Section title="Objects" id="objects">
      <nav aria-label="Folder" className="crumbs">
        <button type="button" className="link" onClick={() => open('')} aria-current={prefix === '' ? 'location' : undefined}>
          {bucket.bucket_name}
        </button>
        {crumbs.map((c, i) => (
          <span key={i}>
            {' / '}
            <button
              type="button"
              className="link"
              onClick={() => open(`${crumbs.slice(0, i + 1).join('/')}/`)}
              aria-current={i === crumbs.length - 1 ? 'location' : undefined}
            >
              {c}
            </button>
          </span>
        ))}
      </nav>
      {can ? (
        <form className="inline-form" aria-label="Upload" onSubmit={submitWith(() => sendFiles.mutate([...(fileInput.current?.files ?? [])]))}>
          <label>
            Files to upload <input ref={fileInput} type="file" multiple required />
          </label>
          <label>
            Into folder <input value={folder ?? prefix} onChange={(e) => setFolder(e.target.value)} placeholder="(top level)" />
          </label>
          <button type="submit" className="primary" data-write disabled={sendFiles.isPending}>
            Upload
          </button>
        </form>
      ) : null}
      {sending.length ? (
        <ul className="rows" aria-label="Uploads">
          {sending.map((s, i) => (
            <li key={i} className="row" data-upload={s.name}>
              <span>{s.name}</span>
              <progress max={s.total || 1} value={s.sent} aria-label={`Upload of ${s.name}`} />
              <span className="small muted" data-upload-state={s.error ? 'failed' : s.sent >= s.total ? 'done' : 'sending'}>
                {s.error ? s.error : s.sent >= s.total ? `${formatBytes(s.total)} uploaded` : `${formatBytes(s.sent)} of ${formatBytes(s.total)}`}
              </span>
            </li>
          ))}
        </ul>
      ) : null}
      <ErrorBox error={sendFiles.error ?? remove.error ?? download.error} />
      <Rows q={list} label="objects" empty={prefix ? 'This folder is empty.' : 'No objects yet.'}>
        {(o) => {
          const folder = o.type === 'folder';
          const name = o.key.slice(prefix.length);
          return (
            <li key={o.key} className="row" data-object={o.key}>
              {folder ? (
                <button type="button" className="link" onClick={() => open(o.key)}>
                  <span aria-hidden="true">📁 </span>
                  {name}
                </button>
              ) : (
                <span>{name}</span>
              )}
              {folder ? null : (
                <span className="muted small">
                  {o.size == null ? '' : formatBytes(o.size)} {o.content_type ? `· ${o.content_type}` : ''} · <When iso={o.updated_at} />
                </span>
              )}
              <span className="actions">
                {folder ? null : (
                  <button type="button" onClick={() => download.mutate(o.key)} disabled={download.isPending} aria-label={`Download ${o.key}`}>
                    Download
                  </button>
                )}
                {can && !folder ? (
                  <ActionButton label="Delete" danger run={() => remove.mutate([o.key])} confirm={`Delete ${o.key}?`} pending={remove.isPending} />
                ) : null}
              </span>
            </li>
          );
        }}
      </Rows>
      {list.data?.cursor ? (
        <button type="button" onClick={() => setPages([...pages, list.data.cursor])}>
          Load more
        </button>
      ) : null}
    </Section>
  );
}

function Keys({ id, bucket }: { id: string; bucket: Bucket }) {
  const can = useCan('OBJECT_STORAGE:UPDATE', id);
  const [hours, setHours] = useState('0');
  const rotate = useAction(
    () => call(api.POST('/object-storage/{id}/rotate-credentials', { params: { path: { id } }, body: { old_keys_ttl_hours: Number(hours) } })),
    [['object-storage', id]],
    (r) => rememberSecret(r.access_key, r.secret_key),
  );
  const r = rotate.data;
  // The API shows a secret only when it issues it: this tab's create or rotate answer.
  const secret = bucket.secret_key ?? knownSecret(bucket.access_key) ?? (r?.access_key === bucket.access_key ? r.secret_key : null);
  return (
    <Section title="Keys" id="keys">
      <dl className="facts">
        <dt>S3 endpoint</dt>
        <dd>
          <code>{bucket.endpoint}</code> {bucket.endpoint ? <CopyButton text={bucket.endpoint} label="the S3 endpoint" /> : null}
        </dd>
        <dt>Bucket name</dt>
        <dd>
          <code>{bucket.bucket_name}</code>
        </dd>
        <dt>Access key</dt>
        <dd>
          {bucket.access_key ? (
            <>
              <code>{bucket.access_key}</code> <CopyButton text={bucket.access_key} label="the access key" />
            </>
          ) : (
            '—'
          )}
        </dd>
        <dt>Secret key</dt>
        <dd>
          {secret ? (
            <>
              <Secret value={secret} label="the secret key" /> <CopyButton text={secret} label="the secret key" />
            </>
          ) : (
            <span className="muted">shown only when the bucket is created or its keys are rotated</span>
          )}
        </dd>
      </dl>
      <p className="hint">
        For S3 clients: path-style addressing with any region name; see the API documentation for AWS CLI and SDK settings. This page does not need the secret.
      </p>
      {can ? (
        <form className="inline-form" aria-label="Rotate keys" onSubmit={submitWith(() => rotate.mutate())}>
          <label>
            Old keys keep working for (hours) <input type="number" min={0} max={168} value={hours} onChange={(e) => setHours(e.target.value)} required />
          </label>
          <button type="submit" data-write disabled={rotate.isPending}>
            Rotate keys
          </button>
        </form>
      ) : null}
      <ErrorBox error={rotate.error} />
      {r ? (
        <p role="status" className="notice-line" data-rotated>
          New keys: access key <code>{r.access_key}</code>, the secret above (the API shows it this once).{' '}
          {r.old_access_key ? (
            <>
              The old key <code>{r.old_access_key}</code> {Number(hours) > 0 ? 'stops working' : 'stopped working'} <When iso={r.old_keys_expired_at} />.
            </>
          ) : null}
        </p>
      ) : null}
    </Section>
  );
}

function Cdn({ id, bucket }: { id: string; bucket: Bucket }) {
  const can = useCan('OBJECT_STORAGE:UPDATE', id);
  const inv = [['object-storage', id]];
  const enable = useAction(() => call(api.POST('/object-storage/{id}/domain', { params: { path: { id } } })), inv);
  const disable = useAction(() => call(api.DELETE('/object-storage/{id}/domain', { params: { path: { id } } })), inv);
  const purge = useAction(() => call(api.POST('/object-storage/{id}/purge-cache', { params: { path: { id } } })), inv);
  return (
    <Section title="Public CDN domain" id="cdn">
      {bucket.domain ? (
        <p data-cdn="on">
          Anyone can read objects at <code>https://{bucket.domain}/&lt;key&gt;</code> <CopyButton text={`https://${bucket.domain}/`} label="the CDN address" />
        </p>
      ) : (
        <p data-cdn="off">Off: objects are read only with the keys or presigned URLs.</p>
      )}
      {can ? (
        bucket.domain ? (
          <ActionButton label="Turn the CDN domain off" run={() => disable.mutate()} pending={disable.isPending} confirm="Stop serving this bucket publicly?" />
        ) : (
          <ActionButton label="Turn the CDN domain on" run={() => enable.mutate()} pending={enable.isPending} />
        )
      ) : null}
      {can && bucket.domain ? (
        <>
          <ActionButton label="Purge CDN cache" run={() => purge.mutate()} pending={purge.isPending} />
          {purge.isSuccess && !purge.isPending ? (
            <p role="status" className="notice-line" data-purged>
              {purge.data.message}: the CDN serves every object afresh.
            </p>
          ) : null}
        </>
      ) : null}
      <p className="hint">The CDN keeps an object as long as its Cache-Control allows; purge it after replacing objects under the same keys.</p>
      <ErrorBox error={enable.error ?? disable.error ?? purge.error} />
    </Section>
  );
}

const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'HEAD'] as const;
type Method = (typeof METHODS)[number];
const lines = (s: string) =>
  s
    .split(/[\n,]/)
    .map((l) => l.trim())
    .filter(Boolean);

function Cors({ id }: { id: string }) {
  const can = useCan('OBJECT_STORAGE:UPDATE', id);
  const key = ['cors', id];
  const list = useQuery({ queryKey: key, queryFn: () => call(api.GET('/object-storage/{id}/cors-policies', { params: { path: { id } } })) });
  const [editing, setEditing] = useState<string | null>(null);
  const [methods, setMethods] = useState<Method[]>(['GET']);
  const [origins, setOrigins] = useState('');
  const [headers, setHeaders] = useState('');
  const reset = () => {
    setEditing(null);
    setMethods(['GET']);
    setOrigins('');
    setHeaders('');
  };
  const save = useAction(
    () => {
      const body = { methods, origins: lines(origins), headers: lines(headers) };
      return editing
        ? call(api.PATCH('/object-storage/{id}/cors-policies/{cors_policy_id}', { params: { path: { id, cors_policy_id: editing } }, body }))
        : call(api.POST('/object-storage/{id}/cors-policies', { params: { path: { id } }, body }));
    },
    [key],
    reset,
  );
  const remove = useAction(
    (rule: string) => call(api.DELETE('/object-storage/{id}/cors-policies/{cors_policy_id}', { params: { path: { id, cors_policy_id: rule } } })),
    [key],
  );
  return (
    <Section title="CORS rules" id="cors">
      <p className="hint">Browsers on other sites may call the bucket's S3 endpoint only as these rules allow, checked in order.</p>
      <ErrorBox error={remove.error} />
      <Rows q={list} label="CORS rules" empty="No CORS rules: other sites' pages cannot read the bucket.">
        {(r) => (
          <li key={r.id} className="row" data-cors={r.id}>
            <span>
              <strong>{r.methods.join(', ')}</strong> from {r.origins.join(', ')}
              {r.headers?.length ? <span className="muted small"> · headers {r.headers.join(', ')}</span> : null}
            </span>
            {can ? (
              <span className="actions">
                <button
                  type="button"
                  onClick={() => {
                    setEditing(r.id);
                    setMethods(r.methods as Method[]);
                    setOrigins(r.origins.join('\n'));
                    setHeaders((r.headers ?? []).join('\n'));
                  }}
                >
                  Edit
                </button>
                <ActionButton label="Delete" danger run={() => remove.mutate(r.id)} confirm="Delete this CORS rule?" />
              </span>
            ) : null}
          </li>
        )}
      </Rows>
      {can ? (
        <form className="settings grid-form" aria-label={editing ? 'Edit CORS rule' : 'New CORS rule'} onSubmit={submitWith(() => save.mutate())}>
          <fieldset className="wide">
            <legend>Methods</legend>
            {METHODS.map((m) => (
              <label key={m} className="inline">
                <input
                  type="checkbox"
                  checked={methods.includes(m)}
                  onChange={(e) => setMethods(e.target.checked ? [...methods, m] : methods.filter((x) => x !== m))}
                />{' '}
                {m}
              </label>
            ))}
          </fieldset>
          <div>
            <label htmlFor="cors-origins">Origins (one a line, * for any)</label>
            <textarea id="cors-origins" rows={2} value={origins} onChange={(e) => setOrigins(e.target.value)} required />
          </div>
          <div>
            <label htmlFor="cors-headers">Allowed headers (one a line)</label>
            <textarea id="cors-headers" rows={2} value={headers} onChange={(e) => setHeaders(e.target.value)} />
          </div>
          <div className="wide">
            <button type="submit" data-write disabled={save.isPending || !methods.length}>
              {editing ? 'Save rule' : 'Add rule'}
            </button>{' '}
            {editing ? (
              <button type="button" onClick={reset}>
                Cancel
              </button>
            ) : null}
          </div>
          <ErrorBox error={save.error} />
        </form>
      ) : null}
    </Section>
  );
}
