// The shell: sign-in when no key is in the session, otherwise the navigation and the routed page.
import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { session } from './api.js';
import { AccessProvider, useAccess } from './auth.js';
import { Link, match, navigate, usePath } from './router.js';
import { ErrorBox } from './ui.js';
import { OperatorPage } from './pages/Operator.js';
import { ROUTES } from './routes.js';

export function App() {
  const [token, setToken] = useState(session.token());
  const qc = useQueryClient();
  const path = usePath();
  useEffect(() => {
    const out = () => setToken(null);
    window.addEventListener('slipway:signed-out', out);
    return () => window.removeEventListener('slipway:signed-out', out);
  }, []);
  const signIn = (t: string) => {
    session.setToken(t);
    qc.clear();
    setToken(t);
  };
  const signOut = () => {
    session.setToken(null);
    qc.clear();
    setToken(null);
    navigate('/');
  };
  // The operator pages use the operator token, not an API key.
  if (path.startsWith('/operator')) return <Shell onSignOut={token ? signOut : undefined}>{<OperatorPage />}</Shell>;
  if (!token) return <SignIn onSignIn={signIn} />;
  return (
    <AccessProvider key={token} fallback={(e) => <SignIn onSignIn={signIn} error={e} />}>
      <Shell onSignOut={signOut} who={<Who />}>
        <Routes path={path} />
      </Shell>
    </AccessProvider>
  );
}

function Routes({ path }: { path: string }) {
  for (const [pattern, page] of ROUTES) {
    const m = match(pattern, path || '/');
    if (m) return page(m);
  }
  return (
    <main>
      <h1>Not found</h1>
      <p>
        No page at <code>{path}</code>. <Link to="/">Back to the overview</Link>
      </p>
    </main>
  );
}

function Shell({ children, onSignOut, who }: { children: ReactNode; onSignOut?: () => void; who?: ReactNode }) {
  return (
    <div className="shell">
      <a className="skip" href="#content">
        Skip to content
      </a>
      <header className="top">
        <Link to="/" className="brand">
          Slipway
        </Link>
        <nav aria-label="Main">
          <Link to="/">Overview</Link>
          <Link to="/settings">Settings</Link>
          <Link to="/webhooks">Webhooks</Link>
          <Link to="/api-keys">API keys</Link>
          <Link to="/operator">Operator</Link>
        </nav>
        {onSignOut ? (
          <div className="who">
            {who}
            <button type="button" onClick={onSignOut}>
              Sign out
            </button>
          </div>
        ) : null}
      </header>
      <div id="content" className="content">
        {children}
      </div>
    </div>
  );
}

function Who() {
  const a = useAccess();
  return <span data-testid="who">{`${a.name}${a.roles.length ? ` · ${a.roles.join(', ')}` : ''}`}</span>;
}

function SignIn({ onSignIn, error }: { onSignIn: (t: string) => void; error?: unknown }) {
  const [value, setValue] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (value.trim()) onSignIn(value.trim());
  };
  return (
    <main className="signin">
      <h1>Sign in to Slipway</h1>
      <form onSubmit={submit} className="card">
        <label htmlFor="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={value}
          onChange={(e) => setValue(e.target.value)}
          placeholder="svl_…"
          required
        />
        <p className="hint">The key is kept in this browser tab's session only and sent as a bearer header.</p>
        <button type="submit" className="primary">
          Sign in
        </button>
        {error ? <ErrorBox error={error} /> : null}
      </form>
      <p>
        Operating this Slipway? <Link to="/operator">Operator pages</Link> (operator token).
      </p>
    </main>
  );
}
