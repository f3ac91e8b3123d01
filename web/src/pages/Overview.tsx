// The company's services by project: every kind's list (polled, so statuses stay live), grouped by
// the project each service is in, with its status in words; a create menu offers the kinds the key
// may create, each form with a project picker (preset when opened from a project's section).
import { useState } from 'react';
import { useQueries } from '@tanstack/react-query';
import { untyped } from '../api.js';
import { useAccess } from '../auth.js';
import { useProjectOfService, useProjects } from '../projects.js';
import { Link } from '../router.js';
import { SERVICE_KINDS, type ServiceKind } from '../services.js';
import { Badge, Empty, ErrorBox, Section } from '../ui.js';

interface Item {
  id: string;
  display_name?: string;
  name?: string;
  status?: string | null;
  is_suspended?: boolean;
}

export function Overview() {
  const access = useAccess();
  const kinds = SERVICE_KINDS.filter((k) => access.canAny(k.permission.read));
  const lists = useQueries({
    queries: kinds.map((k) => ({
      queryKey: [k.key],
      queryFn: () => untyped.get<{ data: Item[] }>(`/${k.key}`, { limit: 100 }),
      refetchInterval: 5_000,
    })),
  });
  const projects = useProjects();
  const { byService } = useProjectOfService();
  const [creating, setCreating] = useState<{ kind: ServiceKind; project: string } | null>(null);
  const groups = new Map<string, { kind: ServiceKind; item: Item }[]>();
  kinds.forEach((kind, i) => {
    for (const item of lists[i]?.data?.data ?? []) {
      const p = byService.get(item.id) ?? '';
      groups.set(p, [...(groups.get(p) ?? []), { kind, item }]);
    }
  });
  const projectList = projects.data?.data ?? [];
  const loading = lists.some((l) => l.isPending) || projects.isPending;
  return (
    <main>
      <div className="page-head">
        <h1>Overview</h1>
        <CreateMenu onPick={(kind) => setCreating({ kind, project: '' })} />
      </div>
      {creating ? (
        <div className="creating">
          <creating.kind.Create key={`${creating.kind.key}-${creating.project}`} project={creating.project} />
          <button type="button" onClick={() => setCreating(null)}>
            Close
          </button>
        </div>
      ) : null}
      {lists.map((l, i) => (l.isError ? <ErrorBox key={kinds[i]!.key} error={l.error} /> : null))}
      {projects.isError ? <ErrorBox error={projects.error} /> : null}
      {loading ? (
        <p className="loading" aria-busy="true">
          Loading services…
        </p>
      ) : null}
      {!loading && groups.size === 0 && !projectList.length ? <Empty>No services yet. Use Create to add your first one.</Empty> : null}
      {[...projectList.map((p) => ({ id: p.id, title: p.display_name })), { id: '', title: 'Not in a project' }]
        .filter((p) => p.id || groups.has(''))
        .map((p) => (
          <Section
            key={p.id || 'none'}
            title={p.title}
            id={`project-${p.id || 'none'}`}
            actions={p.id ? <CreateMenu label={`Create in ${p.title}`} onPick={(kind) => setCreating({ kind, project: p.id })} /> : null}
          >
            {groups.has(p.id) ? (
              kinds
                .filter((k) => groups.get(p.id)!.some((g) => g.kind === k))
                .map((k) => (
                  <div key={k.key} className="kind">
                    <h3>{k.label}</h3>
                    <ul className="rows">
                      {groups
                        .get(p.id)!
                        .filter((g) => g.kind === k)
                        .map(({ item }) => (
                          <li key={item.id} className="row" data-kind={k.key}>
                            {k.link ? <Link to={k.link(item.id)}>{item.display_name ?? item.name}</Link> : <span>{item.display_name ?? item.name}</span>}
                            <span className="muted small">{item.name}</span>
                            {item.is_suspended || item.status ? <Badge status={item.is_suspended ? 'suspended' : item.status} /> : null}
                          </li>
                        ))}
                    </ul>
                  </div>
                ))
            ) : (
              <Empty>No services in this project yet.</Empty>
            )}
          </Section>
        ))}
    </main>
  );
}

/** A disclosure listing the kinds this key may create. */
function CreateMenu({ onPick, label = 'Create' }: { onPick: (k: ServiceKind) => void; label?: string }) {
  const access = useAccess();
  const [open, setOpen] = useState(false);
  const kinds = SERVICE_KINDS.filter((k) => access.can(k.permission.create));
  if (!kinds.length) return null;
  return (
    // Escape closes the menu and leaves the focus on its button.
    <div
      className="menu actions"
      onKeyDown={(e) => {
        if (e.key === 'Escape' && open) {
          setOpen(false);
          (e.currentTarget.firstElementChild as HTMLElement | null)?.focus();
        }
      }}
    >
      <button type="button" data-write aria-expanded={open} onClick={() => setOpen(!open)} className={label === 'Create' ? 'primary' : undefined}>
        {label} <span aria-hidden="true">{open ? '▴' : '▾'}</span>
      </button>
      {open ? (
        <ul className="menu-list" aria-label={label}>
          {kinds.map((k) => (
            <li key={k.key}>
              <button
                type="button"
                data-write
                onClick={() => {
                  setOpen(false);
                  onPick(k);
                }}
              >
                New {k.one}
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
