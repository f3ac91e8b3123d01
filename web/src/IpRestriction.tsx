// The IP rules of an application or a database (one API shape at `<base>/ip-restriction`): on or
// off, allow or deny, the addresses and CIDR ranges one a line. Saved together with PUT.
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { untyped } from './api.js';
import { ErrorBox, Loaded, Section, submitWith, useAction } from './ui.js';

interface Rules {
  type: 'allow' | 'deny';
  is_enabled: boolean;
  ip_list: string[];
}

export function IpRestriction({ base, can, hint }: { base: string; can: boolean; hint: string }) {
  const key = ['ip-restriction', base];
  const q = useQuery({ queryKey: key, queryFn: () => untyped.get<Rules>(`${base}/ip-restriction`) });
  const [draft, setDraft] = useState<{ type: Rules['type']; is_enabled: boolean; ips: string } | null>(null);
  const save = useAction(
    (body: Rules) => untyped.put<Rules>(`${base}/ip-restriction`, body),
    [key],
    () => setDraft(null),
  );
  return (
    <Section title="IP rules" id="ip-rules">
      <p className="hint">{hint}</p>
      <Loaded q={q} label="IP rules">
        {(r) => {
          const d = draft ?? { type: r.type, is_enabled: r.is_enabled, ips: r.ip_list.join('\n') };
          const set = (patch: Partial<typeof d>) => setDraft({ ...d, ...patch });
          return (
            <form
              className="settings"
              aria-label="IP rules"
              data-ip-rules={r.is_enabled ? r.type : 'off'}
              onSubmit={submitWith(() =>
                save.mutate({
                  type: d.type,
                  is_enabled: d.is_enabled,
                  ip_list: d.ips
                    .split(/[\n,]/)
                    .map((l) => l.trim())
                    .filter(Boolean),
                }),
              )}
            >
              <fieldset disabled={!can}>
                <legend>Rules</legend>
                <label className="inline">
                  <input type="checkbox" checked={d.is_enabled} onChange={(e) => set({ is_enabled: e.target.checked })} /> Apply the rules
                </label>
                <label className="inline">
                  <input type="radio" name={`${base}-ip-type`} checked={d.type === 'allow'} onChange={() => set({ type: 'allow' })} /> Allow only these
                  addresses
                </label>
                <label className="inline">
                  <input type="radio" name={`${base}-ip-type`} checked={d.type === 'deny'} onChange={() => set({ type: 'deny' })} /> Deny these addresses
                </label>
                <label htmlFor={`${base}-ips`}>Addresses or CIDR ranges (one a line)</label>
                <textarea id={`${base}-ips`} rows={3} value={d.ips} onChange={(e) => set({ ips: e.target.value })} />
              </fieldset>
              {can ? (
                <button type="submit" data-write disabled={save.isPending || !draft}>
                  Save IP rules
                </button>
              ) : null}
              <ErrorBox error={save.error} />
            </form>
          );
        }}
      </Loaded>
    </Section>
  );
}
