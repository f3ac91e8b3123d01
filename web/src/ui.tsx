// Shared building blocks: status badges, relative dates, the loading / empty / error states every
// view shows, buttons that run a mutation and report its failure, a reveal toggle and a copy button.
import { useState, useSyncExternalStore, type FormEvent, type ReactNode } from 'react';
import { useMutation, useQueryClient, type QueryKey, type UseQueryResult } from '@tanstack/react-query';
import { ApiError } from './api.js';
import { exactTime, relativeTime } from './format.js';
import { statusWords } from './status.js';

/** A status in words (`deploymentSuccess` → "Deployed"); `data-status` keeps the API's value. */
export function Badge({ status }: { status: string | null | undefined }) {
  const { words, tone } = statusWords(status);
  return (
    <span className={`badge badge-${tone}`} data-status={status ?? 'unknown'}>
      {words}
    </span>
  );
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error as Error;
  const forbidden = e instanceof ApiError && e.status === 403;
  return (
    <div role="alert" className="error">
      {forbidden ? <strong>Not allowed (403): </strong> : e instanceof ApiError ? <strong>Error {e.status}: </strong> : null}
      {e.message}
    </div>
  );
}

/** Renders a query's loading and error states, then `children(data)`. */
export function Loaded<T>({ q, children, label }: { q: UseQueryResult<T>; children: (data: T) => ReactNode; label?: string }) {
  if (q.isPending)
    return (
      <p className="loading" aria-busy="true">
        Loading{label ? ` ${label}` : ''}…
      </p>
    );
  if (q.isError) return <ErrorBox error={q.error} />;
  return <>{children(q.data)}</>;
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

/** A list query's items as rows (`children` renders each `<li>`), or `empty` when there are none. */
export function Rows<T>({
  q,
  label,
  empty,
  children,
}: {
  q: UseQueryResult<{ data: T[] }>;
  label: string;
  empty: ReactNode;
  children: (item: T) => ReactNode;
}) {
  return (
    <Loaded q={q} label={label}>
      {(d) => (d.data.length ? <ul className="rows">{d.data.map(children)}</ul> : <Empty>{empty}</Empty>)}
    </Loaded>
  );
}

export function Section({ title, actions, children, id }: { title: string; actions?: ReactNode; children: ReactNode; id?: string }) {
  return (
    <section className="card" aria-labelledby={id ? `${id}-h` : undefined} data-section={id}>
      <div className="card-head">
        <h2 id={id ? `${id}-h` : undefined}>{title}</h2>
        {actions ? <div className="actions">{actions}</div> : null}
      </div>
      {children}
    </section>
  );
}

/** A form's submit handler that runs `run` instead of navigating. */
export const submitWith = (run: () => void) => (e: FormEvent) => {
  e.preventDefault();
  run();
};

/** A mutation that invalidates `invalidate` when done; its error is shown by `MutationError`. */
export function useAction<V = void, R = unknown>(fn: (v: V) => Promise<R>, invalidate: QueryKey[] = [], onDone?: (r: R) => void) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: fn,
    onSuccess: async (r) => {
      onDone?.(r);
      await Promise.all(invalidate.map((k) => qc.invalidateQueries({ queryKey: k })));
    },
  });
}

export function ActionButton({
  label,
  run,
  pending,
  confirm,
  danger,
}: {
  label: string;
  run: () => void;
  pending?: boolean;
  confirm?: string;
  danger?: boolean;
}) {
  return (
    <button
      type="button"
      className={danger ? 'danger' : undefined}
      data-write
      disabled={pending}
      onClick={() => {
        if (confirm && !window.confirm(confirm)) return;
        run();
      }}
    >
      {pending ? `${label}…` : label}
    </button>
  );
}

export function Secret({ value, label }: { value: string; label: string }) {
  const [shown, setShown] = useState(false);
  return (
    <span className="secret">
      <code data-secret={shown ? 'shown' : 'hidden'}>{shown ? value : '••••••••'}</code>
      <button type="button" className="link" aria-pressed={shown} aria-label={`${shown ? 'Hide' : 'Reveal'} ${label}`} onClick={() => setShown(!shown)}>
        {shown ? 'Hide' : 'Reveal'}
      </button>
    </span>
  );
}

/** Copies `text`; `label` names what is copied for screen readers when several sit side by side. */
export function CopyButton({ text, label }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      aria-label={label ? `${done ? 'Copied' : 'Copy'} ${label}` : undefined}
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setDone(true);
        } catch {
          setDone(false);
        }
      }}
    >
      {done ? 'Copied' : 'Copy'}
    </button>
  );
}

// One clock for every relative date on the page, ticking every 15 s.
let nowMs = Date.now();
const ticking = new Set<() => void>();
setInterval(() => {
  nowMs = Date.now();
  ticking.forEach((l) => l());
}, 15_000);
const subscribe = (l: () => void) => {
  ticking.add(l);
  return () => ticking.delete(l);
};

/** A date relative to now (`3 minutes ago`) with the exact time in its tooltip. */
export function When({ iso }: { iso: string | null | undefined }) {
  // Re-rendered by the clock; the reading itself is taken now, so a fresh date says "now".
  useSyncExternalStore(subscribe, () => nowMs);
  if (!iso) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={exactTime(iso)}>
      {relativeTime(iso)}
    </time>
  );
}
