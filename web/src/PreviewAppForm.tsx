// The form that creates a preview app of an application for a branch (and pull request), on the
// application's page and on its pipeline's (where `children` picks the application first).
import { useState, type ReactNode } from 'react';
import type { QueryKey } from '@tanstack/react-query';
import { api, call } from './api.js';
import { ErrorBox, submitWith, useAction } from './ui.js';

export function PreviewAppForm({
  appId,
  invalidate,
  onCreated,
  children,
}: {
  appId: string;
  invalidate: QueryKey[];
  onCreated?: (app: { id: string }) => void;
  children?: ReactNode;
}) {
  const [branch, setBranch] = useState('');
  const [pr, setPr] = useState('');
  const create = useAction(
    () =>
      call(
        api.POST('/applications/{id}/preview-apps', {
          params: { path: { id: appId } },
          body: { branch, pull_request_number: pr ? Number(pr) : null },
        }),
      ),
    invalidate,
    (a) => {
      setBranch('');
      setPr('');
      onCreated?.(a);
    },
  );
  return (
    <form className="inline-form" aria-label="New preview app" onSubmit={submitWith(() => create.mutate())}>
      {children}
      <label>
        Branch <input value={branch} onChange={(e) => setBranch(e.target.value)} required />
      </label>
      <label>
        Pull request (optional) <input type="number" min={1} value={pr} onChange={(e) => setPr(e.target.value)} />
      </label>
      <button type="submit" data-write disabled={create.isPending}>
        Create preview app
      </button>
      <ErrorBox error={create.error} />
    </form>
  );
}
