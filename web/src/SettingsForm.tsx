// A service's settings form: text fields edited as a draft and saved together (only the changed
// ones are sent; an emptied optional field is sent as null, a multi-line one as a list of lines),
// with switches and other controls that save at once passed as children.
import { useState, type ReactNode } from 'react';
import { ErrorBox, submitWith } from './ui.js';

export interface TextField {
  key: string;
  label: string;
  value: string | readonly string[] | null | undefined;
  /** One entry a line, sent as a list. */
  lines?: boolean;
  /** Sent as '' rather than null when emptied. */
  required?: boolean;
}

export function SettingsForm(props: {
  name: string;
  fields: TextField[];
  can: boolean;
  save: (body: Record<string, unknown>, done: () => void) => void;
  pending: boolean;
  error: unknown;
  children?: ReactNode;
}) {
  const [draft, setDraftState] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState(false);
  const setDraft = (d: Record<string, string>) => {
    setSaved(false);
    setDraftState(d);
  };
  const shown = (f: TextField) => draft[f.key] ?? (Array.isArray(f.value) ? f.value.join('\n') : ((f.value as string | null | undefined) ?? ''));
  const submit = submitWith(() => {
    const body: Record<string, unknown> = {};
    for (const f of props.fields) {
      const v = draft[f.key];
      if (v === undefined) continue;
      body[f.key] = f.lines
        ? v
            .split('\n')
            .map((l) => l.trim())
            .filter(Boolean)
        : v === '' && !f.required
          ? null
          : v;
    }
    props.save(body, () => {
      setDraftState({});
      setSaved(true);
    });
  });
  const id = (f: TextField) => `${props.name}-${f.key}`;
  return (
    <form className="settings grid-form" onSubmit={submit} aria-label={`${props.name} settings`}>
      {props.fields.map((f) => (
        <div key={f.key} className={f.lines ? 'wide' : undefined}>
          <label htmlFor={id(f)}>{f.label}</label>
          {f.lines ? (
            <textarea id={id(f)} rows={2} value={shown(f)} disabled={!props.can} onChange={(e) => setDraft({ ...draft, [f.key]: e.target.value })} />
          ) : (
            <input id={id(f)} value={shown(f)} disabled={!props.can} required={f.required} onChange={(e) => setDraft({ ...draft, [f.key]: e.target.value })} />
          )}
        </div>
      ))}
      {props.children ? <div className="wide">{props.children}</div> : null}
      {props.can ? (
        <div className="wide">
          <button type="submit" data-write disabled={props.pending || !Object.keys(draft).length}>
            Save settings
          </button>{' '}
          <span role="status" className="muted small">
            {saved ? 'Saved' : ''}
          </span>
        </div>
      ) : null}
      <ErrorBox error={props.error} />
    </form>
  );
}

/** The deploy-path filters both applications and static sites have. */
export const deployPathFields = (v: { allow_deploy_paths?: readonly string[]; ignore_deploy_paths?: readonly string[] }): TextField[] => [
  { key: 'allow_deploy_paths', label: 'Deploy only when these paths change (one pattern a line)', value: v.allow_deploy_paths, lines: true },
  { key: 'ignore_deploy_paths', label: 'Skip deploys when only these paths change (one pattern a line)', value: v.ignore_deploy_paths, lines: true },
];
