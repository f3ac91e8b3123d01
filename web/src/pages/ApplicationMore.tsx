// The application page's further sections: each process's resource type, internal connections
// (private ports) and TCP proxies, IP rules, maintenance mode, egress IPs, persistent volumes and
// preview apps. Each section shows only what the API answers (a 404 for an operation this server
// does not have is shown as such).
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from '../api.js';
import { useCan } from '../auth.js';
import { formatBytes, formatValue } from '../format.js';
import { IpRestriction } from '../IpRestriction.js';
import { navigate } from '../router.js';
import { SettingsForm } from '../SettingsForm.js';
import { ActionButton, Badge, CopyButton, Empty, ErrorBox, Loaded, Rows, Section, submitWith, useAction } from '../ui.js';
import { PreviewAppForm } from '../PreviewAppForm.js';

export function ApplicationExtras({ id }: { id: string }) {
  const can = useCan('APP:UPDATE', id);
  return (
    <>
      <Resources id={id} can={can} />
      <Ports id={id} can={can} />
      <Volumes id={id} can={can} />
      <IpRestriction base={`/applications/${id}`} can={can} hint="Which client addresses the application's domains answer." />
      <Maintenance id={id} can={can} />
      <EgressIps id={id} />
      <PreviewApps id={id} />
    </>
  );
}

const useProcesses = (id: string) =>
  useQuery({ queryKey: ['processes', id], queryFn: () => call(api.GET('/applications/{id}/processes', { params: { path: { id }, query: { limit: 100 } } })) });

// Resource types give CPU in millicores and memory in MiB.
const cpuWords = (milli: number) => formatValue(milli / 1000, 'cores');
const memoryWords = (mib: number) => formatBytes(mib * 1024 * 1024);

function Resources({ id, can }: { id: string; can: boolean }) {
  const processes = useProcesses(id);
  const types = useQuery({ queryKey: ['process-resource-types'], queryFn: () => call(api.GET('/resources/process-resource-types')), staleTime: Infinity });
  const save = useAction(
    ({ process, type }: { process: string; type: string }) =>
      call(api.PATCH('/applications/{id}/processes/{process_id}', { params: { path: { id, process_id: process } }, body: { resource_type_id: type } })),
    [['processes', id]],
  );
  return (
    <Section title="Process resources" id="resources">
      <ErrorBox error={save.error} />
      <Rows q={processes} label="processes" empty="No processes.">
        {(p) => (
          <li key={p.id} className="row" data-resources={p.key}>
            <strong>{p.display_name ?? p.key}</strong>
            <span className="muted small">
              {p.cpu_limit != null ? cpuWords(p.cpu_limit) : '—'} CPU · {p.memory_limit != null ? memoryWords(p.memory_limit) : '—'} memory
            </span>
            <label className="inline">
              <span className="sr-only">Resource type of {p.display_name ?? p.key}</span>
              <select value={p.resource_type_id ?? ''} disabled={!can || save.isPending} onChange={(e) => save.mutate({ process: p.id, type: e.target.value })}>
                {p.resource_type_id ? null : <option value="">—</option>}
                {(types.data ?? []).map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.name} ({cpuWords(t.cpu_limit)}, {memoryWords(t.memory_limit)})
                  </option>
                ))}
              </select>
            </label>
          </li>
        )}
      </Rows>
    </Section>
  );
}

/** Private ports (reachable by the company's other services) and TCP proxies (from the internet). */
function Ports({ id, can }: { id: string; can: boolean }) {
  const processes = useProcesses(id);
  const byId = new Map((processes.data?.data ?? []).map((p) => [p.id, p]));
  const privKey = ['private-ports', id];
  const tcpKey = ['tcp-proxies', id];
  const settling = (rows: { status: string }[] | undefined) => (rows ?? []).some((r) => r.status === 'creating' || r.status === 'deleting');
  const priv = useQuery({
    queryKey: privKey,
    queryFn: () => call(api.GET('/applications/{id}/private-ports', { params: { path: { id }, query: { limit: 100 } } })),
    refetchInterval: (q) => (settling(q.state.data?.data) ? 1_500 : 15_000),
  });
  const tcp = useQuery({
    queryKey: tcpKey,
    queryFn: () => call(api.GET('/applications/{id}/tcp-proxies', { params: { path: { id }, query: { limit: 100 } } })),
    refetchInterval: (q) => (settling(q.state.data?.data) ? 1_500 : 15_000),
  });
  const addPriv = useAction(
    (b: { process_id: string; port: number }) => call(api.POST('/applications/{id}/private-ports', { params: { path: { id } }, body: b })),
    [privKey],
  );
  const addTcp = useAction(
    (b: { process_id: string; port: number }) => call(api.POST('/applications/{id}/tcp-proxies', { params: { path: { id } }, body: b })),
    [tcpKey],
  );
  const delPriv = useAction(
    (p: string) => call(api.DELETE('/applications/{id}/private-ports/{private_port_id}', { params: { path: { id, private_port_id: p } } })),
    [privKey],
  );
  const delTcp = useAction(
    (p: string) => call(api.DELETE('/applications/{id}/tcp-proxies/{tcp_proxy_id}', { params: { path: { id, tcp_proxy_id: p } } })),
    [tcpKey],
  );
  const processName = (p: string) => byId.get(p)?.display_name ?? byId.get(p)?.key ?? p;
  return (
    <Section title="Internal connections and TCP proxies" id="ports">
      <h3>Private ports</h3>
      <p className="hint">Other applications and databases of the company reach these at the process's internal host name.</p>
      <ErrorBox error={delPriv.error} />
      <Rows q={priv} label="private ports" empty="No private ports.">
        {(p) => {
          const host = byId.get(p.process_id)?.internal_hostname;
          return (
            <li key={p.id} className="row" data-private-port={p.port}>
              <strong>{host ? `${host}:${p.port}` : `port ${p.port}`}</strong>
              {host ? <CopyButton text={`${host}:${p.port}`} label={`the internal address of port ${p.port}`} /> : null}
              <span className="muted small">{processName(p.process_id)}</span>
              <Badge status={p.status} />
              {can ? <ActionButton label="Delete" danger run={() => delPriv.mutate(p.id)} confirm={`Close private port ${p.port}?`} /> : null}
            </li>
          );
        }}
      </Rows>
      {can ? (
        <PortForm what="private port" processes={processes.data?.data ?? []} run={(b) => addPriv.mutate(b)} pending={addPriv.isPending} error={addPriv.error} />
      ) : null}
      <h3>TCP proxies</h3>
      <p className="hint">A public host and port forwarded to a process's port, for protocols other than HTTP.</p>
      <ErrorBox error={delTcp.error} />
      <Rows q={tcp} label="TCP proxies" empty="No TCP proxies.">
        {(p) => (
          <li key={p.id} className="row" data-tcp-proxy={p.port}>
            <strong>
              {p.hostname}:{p.external_port}
            </strong>
            <CopyButton text={`${p.hostname}:${p.external_port}`} label={`the address of the TCP proxy to port ${p.port}`} />
            <span className="muted small">
              → {processName(p.process_id)} port {p.port}
            </span>
            <Badge status={p.status} />
            {can ? <ActionButton label="Delete" danger run={() => delTcp.mutate(p.id)} confirm={`Delete the TCP proxy to port ${p.port}?`} /> : null}
          </li>
        )}
      </Rows>
      {can ? (
        <PortForm what="TCP proxy" processes={processes.data?.data ?? []} run={(b) => addTcp.mutate(b)} pending={addTcp.isPending} error={addTcp.error} />
      ) : null}
    </Section>
  );
}

function PortForm(props: {
  what: string;
  processes: { id: string; key: string; display_name?: string | null }[];
  run: (b: { process_id: string; port: number }) => void;
  pending: boolean;
  error: unknown;
}) {
  const [process, setProcess] = useState('');
  const [port, setPort] = useState('');
  const chosen = process || props.processes[0]?.id || '';
  return (
    <form className="inline-form" aria-label={`New ${props.what}`} onSubmit={submitWith(() => props.run({ process_id: chosen, port: Number(port) }))}>
      <label>
        Process{' '}
        <select value={chosen} onChange={(e) => setProcess(e.target.value)} required>
          {props.processes.map((p) => (
            <option key={p.id} value={p.id}>
              {p.display_name ?? p.key}
            </option>
          ))}
        </select>
      </label>
      <label>
        Port <input type="number" min={1} max={65535} value={port} onChange={(e) => setPort(e.target.value)} required />
      </label>
      <button type="submit" data-write disabled={props.pending || !chosen}>
        Add {props.what}
      </button>
      <ErrorBox error={props.error} />
    </form>
  );
}

function Volumes({ id, can }: { id: string; can: boolean }) {
  const key = ['volumes', id];
  const list = useQuery({
    queryKey: key,
    queryFn: () => call(api.GET('/applications/{id}/volumes', { params: { path: { id }, query: { limit: 100 } } })),
    refetchInterval: (q) => ((q.state.data?.data ?? []).some((v) => v.status === 'deleting') ? 1_500 : 30_000),
  });
  const [draft, setDraft] = useState({ name: '', mount_path: '', size_gb: '1' });
  const add = useAction(
    () => call(api.POST('/applications/{id}/volumes', { params: { path: { id } }, body: { ...draft, size_gb: Number(draft.size_gb) } })),
    [key],
    () => setDraft({ name: '', mount_path: '', size_gb: '1' }),
  );
  const grow = useAction(
    ({ v, size }: { v: string; size: number }) =>
      call(api.PATCH('/applications/{id}/volumes/{volume_id}', { params: { path: { id, volume_id: v } }, body: { size_gb: size } })),
    [key],
  );
  const remove = useAction((v: string) => call(api.DELETE('/applications/{id}/volumes/{volume_id}', { params: { path: { id, volume_id: v } } })), [key]);
  return (
    <Section title="Volumes" id="volumes">
      <p className="hint">Mounted into every process of the application; their contents outlive deployments. A volume can grow, never shrink.</p>
      <ErrorBox error={grow.error ?? remove.error} />
      <Rows q={list} label="volumes" empty="No volumes.">
        {(v) => (
          <li key={v.id} className="row" data-volume={v.name}>
            <strong>{v.name}</strong>
            <code>{v.mount_path}</code>
            <span className="muted small">
              {v.used_bytes == null ? '' : `${formatBytes(v.used_bytes)} of `}
              {v.size_gb} GB
            </span>
            <Badge status={v.status} />
            {can ? (
              <span className="actions">
                <ActionButton label={`Grow ${v.name} to ${v.size_gb * 2} GB`} run={() => grow.mutate({ v: v.id, size: v.size_gb * 2 })} />
                <ActionButton label="Delete" danger run={() => remove.mutate(v.id)} confirm={`Delete ${v.name} and everything in it?`} />
              </span>
            ) : null}
          </li>
        )}
      </Rows>
      {can ? (
        <form className="inline-form" aria-label="New volume" onSubmit={submitWith(() => add.mutate())}>
          <label>
            Name <input value={draft.name} onChange={(e) => setDraft({ ...draft, name: e.target.value })} required />
          </label>
          <label>
            Mount path <input value={draft.mount_path} onChange={(e) => setDraft({ ...draft, mount_path: e.target.value })} required placeholder="/data" />
          </label>
          <label>
            Size (GB) <input type="number" min={1} value={draft.size_gb} onChange={(e) => setDraft({ ...draft, size_gb: e.target.value })} required />
          </label>
          <button type="submit" data-write disabled={add.isPending}>
            Add volume
          </button>
          <ErrorBox error={add.error} />
        </form>
      ) : null}
    </Section>
  );
}

function Maintenance({ id, can }: { id: string; can: boolean }) {
  const key = ['maintenance', id];
  const q = useQuery({ queryKey: key, queryFn: () => call(api.GET('/applications/{id}/maintenance-mode', { params: { path: { id } } })) });
  const save = useAction(
    (body: { is_enabled: boolean; page_url?: string | null }) => call(api.PUT('/applications/{id}/maintenance-mode', { params: { path: { id } }, body })),
    [key],
  );
  return (
    <Section title="Maintenance mode" id="maintenance">
      <Loaded q={q} label="maintenance mode">
        {(m) => (
          <SettingsForm
            name="maintenance"
            can={can}
            // An emptied URL is sent as null: the default page.
            fields={[{ key: 'page_url', label: 'Maintenance page URL (HTTPS; empty for the default page)', value: m.page_url }]}
            save={(body, done) => save.mutate({ is_enabled: m.is_enabled, ...body }, { onSuccess: done })}
            pending={save.isPending}
            error={save.error}
          >
            <label className="inline" data-maintenance={m.is_enabled ? 'on' : 'off'}>
              <input type="checkbox" checked={m.is_enabled} disabled={!can || save.isPending} onChange={(e) => save.mutate({ is_enabled: e.target.checked })} />{' '}
              Answer every request with the maintenance page
            </label>
          </SettingsForm>
        )}
      </Loaded>
    </Section>
  );
}

function EgressIps({ id }: { id: string }) {
  const q = useQuery({
    queryKey: ['egress-ips', id],
    queryFn: () => call(api.GET('/applications/{id}/egress-ips', { params: { path: { id } } })),
    staleTime: 300_000,
  });
  return (
    <Section title="Egress IPs" id="egress">
      <Loaded q={q} label="egress IPs">
        {(e) =>
          e.egress_ips.length ? (
            <>
              <p className="hint">Outbound connections come from these addresses: allow them in firewalls the application calls.</p>
              <ul className="rows">
                {e.egress_ips.map((ip) => (
                  <li key={ip} className="row">
                    <code>{ip}</code> <CopyButton text={ip} label={`the address ${ip}`} />
                  </li>
                ))}
              </ul>
            </>
          ) : (
            <Empty>No fixed outbound address in this region.</Empty>
          )
        }
      </Loaded>
    </Section>
  );
}

function PreviewApps({ id }: { id: string }) {
  const canCreate = useCan('APP:CREATE');
  if (!canCreate) return null;
  return (
    <Section title="Preview apps" id="preview-apps">
      <p className="hint">A copy of this application deploying another branch, for an application in a pipeline with preview apps on.</p>
      <PreviewAppForm appId={id} invalidate={[['applications']]} onCreated={(a) => navigate(`/apps/${a.id}`)} />
    </Section>
  );
}
