// WAL checkpoints of the SQLite file, run by a worker thread with a connection of its own.
//
// In WAL mode with `synchronous = NORMAL` a commit does not fsync; the checkpoint that copies the
// WAL back into the database file does (the WAL, then the file). SQLite runs it inside the commit
// that crosses `wal_autocheckpoint` pages, on the connection's thread: with better-sqlite3 that is
// the event loop, stalled for the fsyncs, and every request in flight waits for them. The worker
// checkpoints in PASSIVE mode (it never blocks the writer or readers) a moment after commits, so
// the event loop does not wait on the disk; the main connection keeps an automatic checkpoint at a larger size
// as a bound on the WAL should the worker fall behind or stop. Durability is unchanged: a commit
// is in the WAL when it returns, as before, and a checkpoint is SQLite's own.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** How often the worker looks for new commits to checkpoint. */
const CHECK_EVERY_MS = 250;
/** The main connection's automatic checkpoint: only if the worker has not kept the WAL below this many pages. */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 16_000;

// CommonJS, evaluated in the worker: it opens the file and, every CHECK_EVERY_MS, checkpoints
// when another connection committed since its last look (PRAGMA data_version moved).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file);
db.pragma('busy_timeout = 5000');
const version = db.prepare('PRAGMA data_version').pluck();
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let seen = version.get();
const timer = setInterval(() => {
  try {
    const now = version.get();
    if (now === seen) return;
    seen = now;
    checkpoint.all();
  } catch (e) {
    parentPort.postMessage({ error: String((e && e.message) || e) });
  }
}, workerData.everyMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * Starts the worker for the database at `file`; `close()` stops it. `onError` hears a failed
 * checkpoint (the main connection's fallback checkpoint still bounds the WAL).
 */
export function startCheckpointer(file: string, onError: (message: string) => void): { close(): Promise<void> } {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { file, driver, everyMs: CHECK_EVERY_MS },
    // A small heap: the worker holds one connection and a timer.
    resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1, codeRangeSizeMb: 4 },
  });
  worker.unref();
  worker.on('message', (m: { error?: string }) => m.error && onError(m.error));
  worker.on('error', (e) => onError(e.message));
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  let closing: Promise<void> | undefined;
  return {
    close() {
      if (!closing && !exited) {
        // Unreferenced, the worker would not keep the loop alive until it has closed its connection.
        worker.ref();
        worker.postMessage('close');
      }
      return (closing ??= exit);
    },
  };
}
