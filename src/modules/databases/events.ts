// The databases area's webhook events (src/shared/events.ts, docs/events.md). `data` is the
// database's representation as GET /databases/{id} returns it (never the password).
import type { AppContext } from '../../shared/context.js';
import type { Tx } from '../../shared/db/index.js';
import { loadDatabase, type DatabasesTable } from './storage.js';
import { databaseDetailView } from './views.js';

declare module '../../shared/events.js' {
  interface EventMap {
    /** The inserted row. */
    DATABASE_CREATE: DatabasesTable;
    /** The row (the payload reads the current one). */
    DATABASE_UPDATE: DatabasesTable;
    /** The row as it was last stored, just before its removal. */
    DATABASE_DELETE: DatabasesTable;
  }
}

/** The current row, or the given one (e.g. a row that was just deleted). */
const current = async (tx: Tx, d: DatabasesTable) => (await loadDatabase(tx, d.id)) ?? d;

export function registerDatabaseEvents(app: AppContext): void {
  const module = 'databases';
  app.events.source({
    type: 'DATABASE_CREATE',
    module,
    operations: ['createDatabaseV3'],
    when: 'when the database row is inserted (status creating), in the same transaction',
    payload: async (tx, d) => databaseDetailView(await current(tx, d)),
  });
  app.events.source({
    type: 'DATABASE_UPDATE',
    module,
    operations: ['updateDatabaseV3', 'suspendDatabaseV3', 'activateDatabaseV3', 'toggleDatabaseExternalConnectionV3', 'updateDatabaseIpRestrictionV3'],
    when: 'when the change is stored (not for requests that change nothing, e.g. suspending a suspended database)',
    payload: async (tx, d) => databaseDetailView(await current(tx, d)),
  });
  app.events.source({
    type: 'DATABASE_DELETE',
    module,
    operations: ['deleteDatabaseV3'],
    when: 'when deletion completes (the database and its backups are gone); a failed deletion emits nothing',
    payload: (_tx, d) => databaseDetailView(d),
  });
}
