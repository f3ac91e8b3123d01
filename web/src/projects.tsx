// The company's projects, read once and shared: the list, which project each service is in (from
// each project's services, since list items of the contract carry no project), and the picker
// every create form uses.
import { useQueries, useQuery } from '@tanstack/react-query';
import { api, call } from './api.js';

export function useProjects() {
  return useQuery({ queryKey: ['projects'], queryFn: () => call(api.GET('/projects', { params: { query: { limit: 100 } } })) });
}

/** Service id → project id, for every service in a project. */
export function useProjectOfService(): { byService: Map<string, string>; pending: boolean } {
  const projects = useProjects();
  const details = useQueries({
    queries: (projects.data?.data ?? []).map((p) => ({
      queryKey: ['projects', p.id],
      queryFn: () => call(api.GET('/projects/{id}', { params: { path: { id: p.id } } })),
      refetchInterval: 15_000,
    })),
  });
  const byService = new Map<string, string>();
  for (const d of details) for (const s of d.data?.services ?? []) byService.set(s.id, d.data!.id);
  return { byService, pending: projects.isPending || details.some((d) => d.isPending) };
}

/** A project select; '' stands for "no project" unless `required`. */
export function ProjectPicker({ id, value, onChange, required }: { id: string; value: string; onChange: (v: string) => void; required?: boolean }) {
  const projects = useProjects();
  const list = projects.data?.data ?? [];
  return (
    <>
      <label htmlFor={id}>Project</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)} required={required} data-project-picker>
        <option value="">{required ? 'Choose a project' : 'No project'}</option>
        {list.map((p) => (
          <option key={p.id} value={p.id}>
            {p.display_name}
          </option>
        ))}
      </select>
      {required && projects.isSuccess && !list.length ? <p className="hint">Create a project first (Settings → Projects).</p> : null}
    </>
  );
}
