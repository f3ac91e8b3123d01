// The operator's controls of the simulated runtime, shared by the suites of the services it runs
// (applications, static sites): progression modes, fault rules, and a metrics window around now.
import type { TestServer } from './server.js';
import { expectStatus } from './util.js';

export type Progression = { mode: 'immediate' } | { mode: 'reads'; reads: number } | { mode: 'duration'; ms: number };

/** Sets the progression of an operation kind through the operator surface. */
export async function setProgression(s: TestServer, operation: string, p: Progression) {
  expectStatus(await s.admin('PUT', `/simulation/progression/${operation}`, p), 200);
}

export async function addFault(s: TestServer, rule: Record<string, unknown>) {
  return expectStatus(await s.admin('POST', '/simulation/faults', rule), 201);
}

/** A metrics window around now (ten minutes back, two ahead). */
export function window(): string {
  const now = Date.now();
  return `from=${new Date(now - 10 * 60_000).toISOString()}&to=${new Date(now + 2 * 60_000).toISOString()}`;
}

/** The eight traffic metrics of a service (the path segment after `/metrics/`), named here rather than taken from the source. */
export const TRAFFIC_METRICS = [
  'requests-per-minute',
  'response-time',
  'response-time-avg',
  'status-codes',
  'top-status-codes',
  'top-countries',
  'slowest-requests',
  'top-pages',
];
