import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { ApiError, session } from './api.js';
import { App } from './App.js';
import './styles.css';

const client = new QueryClient({
  defaultOptions: {
    // 4xx answers are final; retrying them only repeats the error.
    queries: { retry: (n, e) => !(e instanceof ApiError && e.status < 500) && n < 2, refetchOnWindowFocus: false },
  },
  queryCache: new QueryCache({
    // A key that stopped working (rotated, disabled, deleted) signs the session out.
    onError: (e) => {
      if (e instanceof ApiError && e.status === 401 && session.token()) {
        session.setToken(null);
        window.dispatchEvent(new Event('slipway:signed-out'));
      }
    },
  }),
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={client}>
      <App />
    </QueryClientProvider>
  </StrictMode>,
);
