// When a deployment or a database operation is over, said once, and the one loop that reads a
// resource until its status is one of a set (a final one, or the statuses a test waits for).
import { waitFor } from './util.js';

/** The statuses a deployment (of an application or a static site) ends in. */
export const DEPLOYMENT_FINAL: ReadonlySet<string> = new Set(['success', 'failed', 'cancelled', 'skipped']);

/** The statuses a database's operation ends in. */
export const DATABASE_FINAL: ReadonlySet<string> = new Set(['ready', 'error', 'restoringFailed', 'passwordChangeFailed', 'dbDeletionFailed']);

/**
 * Reads the resource (`read`: one read, through the harness or a child process's API) until its
 * status is one of `statuses` (a deployment's final ones unless told) and returns that read. `what`
 * names the wait in the timeout's failure; `timeoutMs` and `intervalMs` as in `waitFor`.
 */
export function untilStatus<T extends { status: string }>(
  what: string,
  read: () => Promise<T>,
  opts: { statuses?: ReadonlySet<string> | readonly string[]; timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const wanted = new Set(opts.statuses ?? DEPLOYMENT_FINAL);
  return waitFor(
    what,
    async () => {
      const r = await read();
      return wanted.has(r.status) ? r : undefined;
    },
    opts.timeoutMs,
    opts.intervalMs,
  );
}
