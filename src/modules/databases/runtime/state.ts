// What the databases table records about a database served by a real engine (column `runtime`,
// JSON; null for simulated databases, which stay simulated whatever the configuration later says).
import { idDigits } from '../../../shared/ids.js';
import type { EngineFamily } from './settings.js';

export interface RuntimeState {
  family: EngineFamily;
  /** Where clients connect (internal and external), as configured when the database was created. */
  host: string;
  port: number;
  externalHost: string;
  externalPort: number;
  /** The server-side database name (also the representation's db_name). */
  database: string;
  /**
   * Set, and committed, before the create step makes the user: from then on the user name on the
   * server belongs to this database (a re-run adopts it, deletion removes it). A user that existed
   * before the claim is someone else's and makes the creation fail.
   */
  claimed: boolean;
  /** Redis: Slipway's admin password on the database's own server, sealed. */
  admin_enc?: string;
}

export const runtimeState = (d: { runtime: string | null }): RuntimeState | null => (d.runtime ? (JSON.parse(d.runtime) as RuntimeState) : null);

/** The server-side database name: the requested name made portable, then the Slipway id (unique, and found again by a re-run). */
export function serverDatabaseName(requested: string, id: string): string {
  const base = requested
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 40);
  return `${base}_${idDigits(id, 12)}`;
}
