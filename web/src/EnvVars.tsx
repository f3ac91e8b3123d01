// Environment variables of an application, a static site or the whole company (global ones): the
// list with values hidden until revealed, add, delete. The three lists share one API shape.
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { untyped } from './api.js';
import { ActionButton, ErrorBox, Rows, Secret, Section, useAction, submitWith } from './ui.js';

interface EnvVar {
  id: string;
  key: string;
  value: string;
}

/** `base` is the list's path (`/applications/<id>/env-vars`); `extra` is added to each new variable. */
export function EnvVars({
  base,
  can,
  title = 'Environment variables',
  extra,
}: {
  base: string;
  can: boolean;
  title?: string;
  extra?: Record<string, unknown>;
}) {
  const qk = ['env-vars', base];
  const list = useQuery({ queryKey: qk, queryFn: () => untyped.get<{ data: EnvVar[] }>(base, { limit: 100 }) });
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const add = useAction(
    () => untyped.post(base, { key, value, ...extra }),
    [qk],
    () => {
      setKey('');
      setValue('');
    },
  );
  const remove = useAction((envId: string) => untyped.delete(`${base}/${envId}`), [qk]);
  const submit = submitWith(() => add.mutate());
  const slug = title.toLowerCase().replace(/\W+/g, '-');
  return (
    <Section title={title} id={slug}>
      <ErrorBox error={add.error ?? remove.error} />
      <Rows q={list} label="variables" empty="No variables.">
        {(v) => (
          <li key={v.id} className="row" data-env={v.key}>
            <code>{v.key}</code>
            <Secret value={v.value} label={`value of ${v.key}`} />
            {can ? <ActionButton label="Delete" danger run={() => remove.mutate(v.id)} confirm={`Delete ${v.key}?`} /> : null}
          </li>
        )}
      </Rows>
      {can ? (
        <form className="inline-form" onSubmit={submit} aria-label={`Add ${title.toLowerCase()}`}>
          <label>
            Key <input value={key} onChange={(e) => setKey(e.target.value)} required pattern="[A-Za-z_][A-Za-z0-9_]*" />
          </label>
          <label>
            Value <input type="password" value={value} onChange={(e) => setValue(e.target.value)} required />
          </label>
          <button type="submit" data-write disabled={add.isPending}>
            Add
          </button>
        </form>
      ) : null}
    </Section>
  );
}
