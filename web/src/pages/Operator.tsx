// Operator pages (the operator token, /_admin): companies, and the simulated runtime's
// progression per operation kind and its fault rules.
import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { admin, session } from '../api.js';
import { ActionButton, Badge, Empty, ErrorBox, Loaded, Section, useAction, When } from '../ui.js';

export function OperatorPage() {
  const [token, setToken] = useState(session.operatorToken());
  const [value, setValue] = useState('');
  if (!token)
    return (
      <main className="signin">
        <h1>Operator</h1>
        <form
          className="card"
          onSubmit={(e) => {
            e.preventDefault();
            session.setOperatorToken(value.trim());
            setToken(value.trim());
          }}
        >
          <label htmlFor="op-token">Operator token</label>
          <input id="op-token" type="password" autoComplete="off" value={value} onChange={(e) => setValue(e.target.value)} required />
          <p className="hint">The token set by SLIPWAY_OPERATOR_TOKEN; kept for this tab's session only.</p>
          <button type="submit" className="primary">
            Open operator pages
          </button>
        </form>
      </main>
    );
  return (
    <main>
      <div className="page-head">
        <h1>Operator</h1>
        <button
          type="button"
          onClick={() => {
            session.setOperatorToken(null);
            setToken(null);
          }}
        >
          Forget operator token
        </button>
      </div>
      <Companies />
      <Simulation />
    </main>
  );
}

function Companies() {
  const list = useQuery({ queryKey: ['admin', 'companies'], queryFn: () => admin<{ data: any[] }>('GET', '/companies') });
  const [name, setName] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const create = useAction(
    () => admin('POST', '/companies', { name, admin_key_role: 'Company Admin' }),
    [['admin', 'companies']],
    (r: any) => {
      setCreated(r.api_key?.token ?? null);
      setName('');
    },
  );
  const status = useAction((v: { id: string; action: string }) => admin('POST', `/companies/${v.id}/${v.action}`), [['admin', 'companies']]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <Section title="Companies" id="companies">
      <ErrorBox error={create.error ?? status.error} />
      {created ? (
        <p role="status">
          Admin key of the new company (shown once): <code>{created}</code>
        </p>
      ) : null}
      <Loaded q={list} label="companies">
        {(d) =>
          d.data.length ? (
            <ul className="rows">
              {d.data.map((c) => (
                <li key={c.id} className="row">
                  <strong>{c.name}</strong>
                  <Badge status={c.status} />
                  <span className="muted small">
                    <When iso={c.created_at} />
                  </span>
                  {c.status === 'active' ? (
                    <ActionButton label="Suspend" danger run={() => status.mutate({ id: c.id, action: 'suspend' })} confirm={`Suspend ${c.name}?`} />
                  ) : (
                    <ActionButton label="Resume" run={() => status.mutate({ id: c.id, action: 'resume' })} />
                  )}
                </li>
              ))}
            </ul>
          ) : (
            <Empty>No companies.</Empty>
          )
        }
      </Loaded>
      <form className="inline-form" onSubmit={submit} aria-label="New company">
        <label>
          Name <input value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <button type="submit" disabled={create.isPending}>
          Create company
        </button>
      </form>
    </Section>
  );
}

interface Sim {
  progression: Record<string, { mode: string; ms?: number; reads?: number }>;
  faults: { id: string; operation: string; target_id: string | null; phase: string | null; probability: number; remaining: number | null; message: string }[];
}

function Simulation() {
  const sim = useQuery({ queryKey: ['admin', 'simulation'], queryFn: () => admin<Sim>('GET', '/simulation') });
  const [op, setOp] = useState('deployment');
  const [mode, setMode] = useState('immediate');
  const [amount, setAmount] = useState('3000');
  const setProg = useAction(
    () =>
      admin(
        'PUT',
        `/simulation/progression/${encodeURIComponent(op)}`,
        mode === 'immediate' ? { mode } : mode === 'duration' ? { mode, ms: Number(amount) } : { mode, reads: Number(amount) },
      ),
    [['admin', 'simulation']],
  );
  const clearProg = useAction((o: string) => admin('DELETE', `/simulation/progression/${encodeURIComponent(o)}`), [['admin', 'simulation']]);
  const [fault, setFault] = useState({ operation: 'deployment', phase: '', target_id: '', probability: '1', remaining: '1' });
  const addFault = useAction(
    () =>
      admin('POST', '/simulation/faults', {
        operation: fault.operation,
        phase: fault.phase || null,
        target_id: fault.target_id || null,
        probability: Number(fault.probability),
        remaining: fault.remaining ? Number(fault.remaining) : null,
      }),
    [['admin', 'simulation']],
  );
  const removeFault = useAction((id: string) => admin('DELETE', `/simulation/faults/${id}`), [['admin', 'simulation']]);
  return (
    <>
      <Section title="Simulation progression" id="progression">
        <ErrorBox error={setProg.error ?? clearProg.error} />
        <Loaded q={sim} label="simulation">
          {(s) =>
            Object.keys(s.progression).length ? (
              <ul className="rows">
                {Object.entries(s.progression).map(([k, p]) => (
                  <li key={k} className="row">
                    <code>{k}</code>
                    <span>{p.mode === 'duration' ? `over ${p.ms} ms` : p.mode === 'reads' ? `after ${p.reads} reads` : 'immediate'}</span>
                    <ActionButton label="Reset" run={() => clearProg.mutate(k)} />
                  </li>
                ))}
              </ul>
            ) : (
              <Empty>Every operation uses the default progression.</Empty>
            )
          }
        </Loaded>
        <form
          className="inline-form"
          aria-label="Set progression"
          onSubmit={(e) => {
            e.preventDefault();
            setProg.mutate();
          }}
        >
          <label>
            Operation <input value={op} onChange={(e) => setOp(e.target.value)} required />
          </label>
          <label>
            Mode{' '}
            <select value={mode} onChange={(e) => setMode(e.target.value)}>
              <option value="immediate">immediate</option>
              <option value="duration">duration (ms)</option>
              <option value="reads">reads</option>
            </select>
          </label>
          {mode !== 'immediate' ? (
            <label>
              {mode === 'duration' ? 'Milliseconds' : 'Reads'}{' '}
              <input type="number" min={mode === 'reads' ? 1 : 0} value={amount} onChange={(e) => setAmount(e.target.value)} />
            </label>
          ) : null}
          <button type="submit">Set</button>
        </form>
      </Section>
      <Section title="Fault rules" id="faults">
        <ErrorBox error={addFault.error ?? removeFault.error} />
        <Loaded q={sim} label="faults">
          {(s) =>
            s.faults.length ? (
              <ul className="rows">
                {s.faults.map((f) => (
                  <li key={f.id} className="row">
                    <code>{f.operation}</code>
                    <span>
                      {f.phase ? `in ${f.phase}` : 'any phase'} · {f.target_id ?? 'any resource'} · p={f.probability} · {f.remaining ?? '∞'} left
                    </span>
                    <span className="muted small">{f.message}</span>
                    <ActionButton label="Remove" danger run={() => removeFault.mutate(f.id)} />
                  </li>
                ))}
              </ul>
            ) : (
              <Empty>No fault rules.</Empty>
            )
          }
        </Loaded>
        <form
          className="inline-form"
          aria-label="Add fault rule"
          onSubmit={(e) => {
            e.preventDefault();
            addFault.mutate();
          }}
        >
          {(['operation', 'phase', 'target_id', 'probability', 'remaining'] as const).map((k) => (
            <label key={k}>
              {k.replace('_', ' ')} <input value={fault[k]} onChange={(e) => setFault({ ...fault, [k]: e.target.value })} required={k === 'operation'} />
            </label>
          ))}
          <button type="submit">Add rule</button>
        </form>
      </Section>
    </>
  );
}
