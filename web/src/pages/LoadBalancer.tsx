// A load balancer: its balancing mode (weights, or the nearest destination by location), its
// destinations of every kind (an application, static site, bucket, another load balancer, an
// external URL) with weights and enable/disable, its domains and settings. A new weight or
// location changes the destination in place (PATCH, x-decided): same id, enabled state kept.
import { useState } from 'react';
import { useQueries, useQuery } from '@tanstack/react-query';
import { api, call, untyped } from '../api.js';
import { useCan } from '../auth.js';
import { Domains } from '../Domains.js';
import { navigate } from '../router.js';
import { SettingsForm } from '../SettingsForm.js';
import { ActionButton, Badge, ErrorBox, Loaded, Rows, Section, submitWith, useAction } from '../ui.js';

type Kind = 'APP' | 'STATIC_SITE' | 'OBJECT_STORAGE' | 'LOAD_BALANCER' | 'EXTERNAL';

// Each kind's list (also its query key, as the overview reads it) and its words.
const KINDS: { type: Kind; label: string; list?: string }[] = [
  { type: 'APP', label: 'Application', list: 'applications' },
  { type: 'STATIC_SITE', label: 'Static site', list: 'static-sites' },
  { type: 'OBJECT_STORAGE', label: 'Bucket', list: 'object-storage' },
  { type: 'LOAD_BALANCER', label: 'Load balancer', list: 'load-balancers' },
  { type: 'EXTERNAL', label: 'External URL' },
];

interface Destination {
  id: string;
  service_id: string | null;
  service_type: Kind;
  is_enabled: boolean;
  weight: number | null;
  url: string | null;
  latitude: number | null;
  longitude: number | null;
}

/** What a new destination is made of: the API's create body. */
type DestinationInput = { service_type: Kind; service_id?: string; url?: string; weight?: number; latitude?: number; longitude?: number };

export function LoadBalancerPage({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const lb = useQuery({ queryKey: ['load-balancers', id], queryFn: () => call(api.GET('/load-balancers/{id}', path)) });
  const can = useCan('LOAD_BALANCER:UPDATE', id);
  const canDelete = useCan('LOAD_BALANCER:DELETE', id);
  const save = useAction((body: Record<string, unknown>) => call(api.PATCH('/load-balancers/{id}', { ...path, body: body as any })), [['load-balancers']]);
  const remove = useAction(
    () => call(api.DELETE('/load-balancers/{id}', path)),
    [['load-balancers'], ['projects']],
    () => navigate('/'),
  );
  return (
    <main>
      <Loaded q={lb} label="load balancer">
        {(l) => (
          <>
            <div className="page-head">
              <h1>{l.display_name}</h1>
              <span className="muted small" data-lb-type={l.type}>
                {l.type === 'GEO' ? 'Nearest destination' : 'Weighted'}
              </span>
              <div className="actions">
                {canDelete ? (
                  <ActionButton
                    label="Delete load balancer"
                    danger
                    run={() => remove.mutate()}
                    pending={remove.isPending}
                    confirm={`Delete ${l.display_name}?`}
                  />
                ) : null}
              </div>
            </div>
            <ErrorBox error={remove.error} />
            <Destinations id={id} geo={l.type === 'GEO'} />
            <Section title="Balancing" id="balancing">
              <fieldset disabled={!can}>
                <legend>How traffic is spread</legend>
                {(
                  [
                    ['DEFAULT', 'By weight: each enabled destination gets its share of requests'],
                    ['GEO', 'Nearest: each client goes to the closest enabled destination (every destination needs a location)'],
                  ] as const
                ).map(([t, words]) => (
                  <label key={t} className="inline">
                    <input type="radio" name="lb-type" checked={l.type === t} onChange={() => save.mutate({ type: t })} /> {words}
                  </label>
                ))}
              </fieldset>
              <ErrorBox error={save.error} />
            </Section>
            <Domains kind="load-balancers" id={id} />
            <Section title="Settings" id="settings">
              <SettingsForm
                name="load balancer"
                can={can}
                fields={[{ key: 'display_name', label: 'Display name', value: l.display_name, required: true }]}
                save={(body, done) => save.mutate(body, { onSuccess: done })}
                pending={save.isPending}
                error={null}
              />
            </Section>
          </>
        )}
      </Loaded>
    </main>
  );
}

/** Service id → display name for every kind a destination may point at. */
function useServiceNames() {
  const lists = useQueries({
    queries: KINDS.filter((k) => k.list).map((k) => ({
      queryKey: [k.list!],
      queryFn: () => untyped.get<{ data: { id: string; display_name: string }[] }>(`/${k.list}`, { limit: 100 }),
    })),
  });
  const byKind = new Map<Kind, { id: string; display_name: string }[]>();
  const names = new Map<string, string>();
  KINDS.filter((k) => k.list).forEach((k, i) => {
    const rows = lists[i]?.data?.data ?? [];
    byKind.set(k.type, rows);
    for (const r of rows) names.set(r.id, r.display_name);
  });
  return { byKind, names };
}

/** A location in words: 48.85° N, 2.35° E. */
const place = (lat: number, lon: number) => `${Math.abs(lat)}° ${lat < 0 ? 'S' : 'N'}, ${Math.abs(lon)}° ${lon < 0 ? 'W' : 'E'}`;

const numberOr = (s: string) => (s.trim() === '' ? undefined : Number(s));

function Destinations({ id, geo }: { id: string; geo: boolean }) {
  const can = useCan('LOAD_BALANCER:UPDATE', id);
  const key = ['lb-destinations', id];
  const list = useQuery({
    queryKey: key,
    queryFn: () => call(api.GET('/load-balancers/{id}/destinations', { params: { path: { id }, query: { limit: 100 } } })),
  });
  const { byKind, names } = useServiceNames();
  const one = (d: string) => ({ params: { path: { id, destination_id: d } } });
  const create = (body: DestinationInput) => call(api.POST('/load-balancers/{id}/destinations', { params: { path: { id } }, body }));
  const toggle = useAction((d: string) => call(api.POST('/load-balancers/{id}/destinations/{destination_id}/toggle', one(d))), [key]);
  const remove = useAction((d: string) => call(api.DELETE('/load-balancers/{id}/destinations/{destination_id}', one(d))), [key]);
  const change = useAction(
    ({ d, ...body }: { d: Destination; weight?: number; latitude?: number; longitude?: number }) =>
      call(api.PATCH('/load-balancers/{id}/destinations/{destination_id}', { ...one(d.id), body })),
    [key],
  );
  const label = (d: Destination) => (d.service_type === 'EXTERNAL' ? (d.url ?? '') : (names.get(d.service_id ?? '') ?? d.service_id ?? ''));
  const rows = (list.data?.data ?? []) as Destination[];
  const total = rows.filter((d) => d.is_enabled).reduce((n, d) => n + (d.weight ?? 100), 0);
  return (
    <Section title="Destinations" id="destinations">
      <ErrorBox error={toggle.error ?? remove.error ?? change.error} />
      <Rows q={list} label="destinations" empty="No destinations: requests are answered 503 until one is added.">
        {(raw) => {
          const d = raw as Destination;
          const kind = KINDS.find((k) => k.type === d.service_type)!;
          return (
            <li key={d.id} className="row col" data-destination={label(d)}>
              <div className="row-line">
                <strong>{label(d)}</strong>
                <span className="muted small">{kind.label}</span>
                <Badge status={d.is_enabled ? 'enabled' : 'disabled'} />
                {geo ? (
                  <span className="small" data-location>
                    {d.latitude == null || d.longitude == null ? 'no location' : `at ${place(d.latitude, d.longitude)}`}
                  </span>
                ) : (
                  <span className="small" data-share>
                    weight {d.weight ?? 100}
                    {d.is_enabled && total ? ` · ${Math.round(((d.weight ?? 100) / total) * 100)}% of requests` : ''}
                  </span>
                )}
                {can ? (
                  <span className="actions">
                    <ActionButton label={d.is_enabled ? 'Disable' : 'Enable'} run={() => toggle.mutate(d.id)} />
                    <ActionButton label="Delete" danger run={() => remove.mutate(d.id)} confirm={`Stop sending traffic to ${label(d)}?`} />
                  </span>
                ) : null}
              </div>
              {can ? <ChangeDestination d={d} geo={geo} name={label(d)} run={(v) => change.mutate({ d, ...v })} pending={change.isPending} /> : null}
            </li>
          );
        }}
      </Rows>
      {can ? <AddDestination id={id} geo={geo} byKind={byKind} create={create} invalidate={key} /> : null}
    </Section>
  );
}

function ChangeDestination(props: {
  d: Destination;
  geo: boolean;
  name: string;
  run: (v: { weight?: number; latitude?: number; longitude?: number }) => void;
  pending: boolean;
}) {
  const { d, geo } = props;
  const [weight, setWeight] = useState(String(d.weight ?? 100));
  const [lat, setLat] = useState(d.latitude == null ? '' : String(d.latitude));
  const [lon, setLon] = useState(d.longitude == null ? '' : String(d.longitude));
  const changed = geo ? lat !== String(d.latitude ?? '') || lon !== String(d.longitude ?? '') : weight !== String(d.weight ?? 100);
  return (
    <form
      className="inline-form"
      aria-label={`Change ${props.name}`}
      onSubmit={submitWith(() => props.run(geo ? { latitude: numberOr(lat), longitude: numberOr(lon) } : { weight: numberOr(weight) }))}
    >
      {geo ? (
        <LocationFields lat={lat} lon={lon} setLat={setLat} setLon={setLon} required />
      ) : (
        <label>
          Weight <input type="number" min={0} max={10000} value={weight} onChange={(e) => setWeight(e.target.value)} required />
        </label>
      )}
      <button type="submit" data-write disabled={props.pending || !changed}>
        Save
      </button>
    </form>
  );
}

function LocationFields(p: { lat: string; lon: string; setLat: (v: string) => void; setLon: (v: string) => void; required?: boolean }) {
  return (
    <>
      <label>
        Latitude <input type="number" step="any" min={-90} max={90} value={p.lat} onChange={(e) => p.setLat(e.target.value)} required={p.required} />
      </label>
      <label>
        Longitude <input type="number" step="any" min={-180} max={180} value={p.lon} onChange={(e) => p.setLon(e.target.value)} required={p.required} />
      </label>
    </>
  );
}

function AddDestination(props: {
  id: string;
  geo: boolean;
  byKind: Map<Kind, { id: string; display_name: string }[]>;
  create: (body: DestinationInput) => Promise<unknown>;
  invalidate: string[];
}) {
  const [type, setType] = useState<Kind>('APP');
  const [service, setService] = useState('');
  const [url, setUrl] = useState('');
  const [weight, setWeight] = useState('100');
  const [lat, setLat] = useState('');
  const [lon, setLon] = useState('');
  const add = useAction(
    () =>
      props.create({
        service_type: type,
        ...(type === 'EXTERNAL' ? { url } : { service_id: service }),
        weight: numberOr(weight),
        latitude: numberOr(lat),
        longitude: numberOr(lon),
      }),
    [props.invalidate],
    () => {
      setService('');
      setUrl('');
    },
  );
  const choices = (props.byKind.get(type) ?? []).filter((s) => s.id !== props.id);
  return (
    <form className="inline-form" aria-label="Add destination" onSubmit={submitWith(() => add.mutate())}>
      <label>
        Kind{' '}
        <select
          value={type}
          onChange={(e) => {
            setType(e.target.value as Kind);
            setService('');
          }}
        >
          {KINDS.map((k) => (
            <option key={k.type} value={k.type}>
              {k.label}
            </option>
          ))}
        </select>
      </label>
      {type === 'EXTERNAL' ? (
        <label>
          URL <input type="url" value={url} onChange={(e) => setUrl(e.target.value)} required placeholder="https://origin.example.com" />
        </label>
      ) : (
        <label>
          Service{' '}
          <select value={service} onChange={(e) => setService(e.target.value)} required>
            <option value="">{choices.length ? 'Choose' : 'None of this kind'}</option>
            {choices.map((s) => (
              <option key={s.id} value={s.id}>
                {s.display_name}
              </option>
            ))}
          </select>
        </label>
      )}
      {props.geo ? (
        <LocationFields lat={lat} lon={lon} setLat={setLat} setLon={setLon} required />
      ) : (
        <label>
          Weight <input type="number" min={0} max={10000} value={weight} onChange={(e) => setWeight(e.target.value)} required />
        </label>
      )}
      <button type="submit" className="primary" data-write disabled={add.isPending}>
        Add destination
      </button>
      <ErrorBox error={add.error} />
    </form>
  );
}
