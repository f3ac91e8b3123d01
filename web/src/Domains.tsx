// The domains of a service (applications, static sites and load balancers share one API shape):
// the system domain with its on/off switch, custom domains with their verification status and the
// DNS records to create (each value with a copy button), the primary domain, add and delete.
// What the API refuses (disabling the primary system domain, a primary that is not active yet) is
// not offered, and its message is shown when it answers 400 anyway.
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, call } from './api.js';
import { useCan } from './auth.js';
import { ActionButton, Badge, CopyButton, ErrorBox, Rows, Section, useAction, submitWith } from './ui.js';

export type DomainOwner = 'applications' | 'static-sites' | 'load-balancers';

const PERMISSION: Record<DomainOwner, string> = {
  applications: 'APP:UPDATE',
  'static-sites': 'STATIC_SITE:UPDATE',
  'load-balancers': 'LOAD_BALANCER:UPDATE',
};

interface DnsRecord {
  type: string;
  name: string;
  value: string;
}

// The three kinds' operations have one shape; the typed paths of applications stand for all.
const P = {
  list: (k: DomainOwner) => `/${k}/{id}/domains` as '/applications/{id}/domains',
  one: (k: DomainOwner) => `/${k}/{id}/domains/{domain_id}` as '/applications/{id}/domains/{domain_id}',
  refresh: (k: DomainOwner) => `/${k}/{id}/domains/{domain_id}/refresh-status` as '/applications/{id}/domains/{domain_id}/refresh-status',
  primary: (k: DomainOwner) => `/${k}/{id}/domains/{domain_id}/set-primary` as '/applications/{id}/domains/{domain_id}/set-primary',
  toggle: (k: DomainOwner) => `/${k}/{id}/domains/{domain_id}/toggle` as '/applications/{id}/domains/{domain_id}/toggle',
};

export function Domains({ kind, id }: { kind: DomainOwner; id: string }) {
  const can = useCan(PERMISSION[kind], id);
  const key = ['domains', kind, id];
  const list = useQuery({
    queryKey: key,
    queryFn: () => call(api.GET(P.list(kind), { params: { path: { id }, query: { limit: 100 } } })),
    // A custom domain waiting for DNS is checked by the server as it is read.
    refetchInterval: (q) => ((q.state.data?.data ?? []).some((d) => d.type === 'CUSTOM' && d.status !== 'ACTIVE') ? 5_000 : 30_000),
  });
  const [name, setName] = useState('');
  const add = useAction(
    () => call(api.POST(P.list(kind), { params: { path: { id } }, body: { domain_name: name.trim() } })),
    [key],
    () => setName(''),
  );
  const one = (domainId: string) => ({ params: { path: { id, domain_id: domainId } } });
  const refresh = useAction((d: string) => call(api.POST(P.refresh(kind), one(d))), [key]);
  const primary = useAction((d: string) => call(api.POST(P.primary(kind), one(d))), [key]);
  const toggle = useAction((d: string) => call(api.POST(P.toggle(kind), one(d))), [key]);
  const remove = useAction((d: string) => call(api.DELETE(P.one(kind), one(d))), [key]);
  const submit = submitWith(() => add.mutate());
  return (
    <Section title="Domains" id="domains">
      <ErrorBox error={add.error ?? refresh.error ?? primary.error ?? toggle.error ?? remove.error} />
      <Rows q={list} label="domains" empty="No domains.">
        {(dom) => {
          const system = dom.type === 'SYSTEM';
          const serving = system ? dom.is_enabled : dom.status === 'ACTIVE';
          return (
            <li key={dom.id} className="row col" data-domain={dom.name}>
              <div className="row-line">
                <strong>{dom.name}</strong>
                <span className="muted small">{system ? 'system domain' : 'custom domain'}</span>
                <Badge status={system ? (dom.is_enabled ? 'enabled' : 'disabled') : dom.status} />
                {dom.is_primary ? <Badge status="primary" /> : null}
                {serving ? <CopyButton text={`https://${dom.name}`} label={`the address https://${dom.name}`} /> : null}
                {can ? (
                  <span className="actions">
                    {!system && dom.status !== 'ACTIVE' ? <ActionButton label="Check DNS" run={() => refresh.mutate(dom.id)} /> : null}
                    {serving && !dom.is_primary ? <ActionButton label="Make primary" run={() => primary.mutate(dom.id)} /> : null}
                    {system && !(dom.is_enabled && dom.is_primary) ? (
                      <ActionButton
                        label={dom.is_enabled ? 'Disable system domain' : 'Enable system domain'}
                        run={() => toggle.mutate(dom.id)}
                        confirm={dom.is_enabled ? `Stop serving ${dom.name}?` : undefined}
                      />
                    ) : null}
                    {!system ? <ActionButton label="Delete" danger run={() => remove.mutate(dom.id)} confirm={`Delete ${dom.name}?`} /> : null}
                  </span>
                ) : null}
              </div>
              {Array.isArray(dom.errors) && dom.errors.length ? (
                <ul className="small problems">
                  {(dom.errors as { type: string; message: string }[]).map((e, i) => (
                    <li key={i}>{e.message}</li>
                  ))}
                </ul>
              ) : null}
              {!system && dom.status !== 'ACTIVE' && Array.isArray(dom.dns_records) && dom.dns_records.length ? (
                <DnsRecords records={dom.dns_records as DnsRecord[]} />
              ) : null}
            </li>
          );
        }}
      </Rows>
      {can ? (
        <form className="inline-form" onSubmit={submit} aria-label="Add domain">
          <label>
            Domain <input value={name} onChange={(e) => setName(e.target.value)} required placeholder="www.example.com" />
          </label>
          <button type="submit" data-write disabled={add.isPending}>
            Add domain
          </button>
        </form>
      ) : null}
    </Section>
  );
}

function DnsRecords({ records }: { records: DnsRecord[] }) {
  return (
    <div className="table-wrap" data-dns-records>
      <table>
        <caption>Create these records at your DNS provider; the status changes once they resolve.</caption>
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col">Name</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {records.map((r, i) => (
            <tr key={i}>
              <td>{r.type}</td>
              <td>
                <code>{r.name}</code> <CopyButton text={r.name} label={`${r.type} record name`} />
              </td>
              <td>
                <code className="wrap">{r.value}</code> <CopyButton text={r.value} label={`${r.type} record value`} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
