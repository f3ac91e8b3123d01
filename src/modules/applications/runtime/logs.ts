// Runtime log lines of a real driver's processes (instances' output, cron and job runs),
// gathered per application, kind and deployment and written in small batches: a timer writes what
// 100 ms gathered, one short transaction per batch; `stop` writes what is left.
import type { AppContext } from '../../../shared/context.js';
import { writeLogs, type LogLine } from '../../../shared/runtime/logs.js';

/** Where a batch's lines go (writeLogs' second argument). */
export type LogBase = Parameters<typeof writeLogs>[1];

export class LogBatcher {
  private pending = new Map<string, { base: LogBase; lines: LogLine[] }>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private app: AppContext) {}

  /** Queues a line; the batch is written within 100 ms. */
  queue(base: LogBase, line: LogLine) {
    const key = `${base.appId}:${base.kind}:${base.deploymentId ?? ''}`;
    const entry = this.pending.get(key) ?? { base, lines: [] };
    entry.lines.push(line);
    this.pending.set(key, entry);
    this.timer ??= setTimeout(() => void this.flush(), 100);
  }

  /** Writes the queued batches (a batch that fails is lost, with a warning). */
  private async flush() {
    this.timer = null;
    const batches = [...this.pending.values()];
    this.pending.clear();
    for (const b of batches)
      await writeLogs(this.app.database.db, b.base, b.lines).catch((e: Error) => this.app.log.warn({ err: e.message }, 'runtime log lines lost'));
  }

  /** At stop: the timer is cleared and what is queued is written now. */
  async stop() {
    if (this.timer) clearTimeout(this.timer);
    await this.flush();
  }
}
