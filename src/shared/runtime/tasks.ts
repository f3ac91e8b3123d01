// Phases that run for real (builds, rollouts) on a local runtime: each phase starts a task in the
// background, outside any transaction, and the deployment's job polls it until it ends. A Slipway
// restart loses the task and the next poll starts the phase again, so every phase must be able to
// run twice.
import type { AppContext } from '../context.js';
import { BuildError } from './build.js';
import type { PhaseResult } from './driver.js';

/** What a task's work ends with: nothing (done), or that the deployment has nothing to do (skipped). */
export type TaskEnd = void | { skipped: string };

type Outcome = { ok: true; skipped?: string } | { ok: false; reason: string };

export class PhaseTasks {
  private tasks = new Map<string, { outcome?: Outcome; abort: AbortController }>();

  constructor(private app: AppContext) {}

  /**
   * Advances the phase `key` (`<deployment>:<phase>`): the first call runs `prepare` (inside the
   * step's transaction: it reads what the phase needs) and starts the work it returns; every call
   * reports the task until it ends. `prepare` gets the signal that `abort` raises.
   */
  async advance(key: string, prepare: (signal: AbortSignal) => Promise<() => Promise<TaskEnd>>): Promise<PhaseResult> {
    let task = this.tasks.get(key);
    if (!task) {
      task = { abort: new AbortController() };
      this.tasks.set(key, task);
      const t = task;
      let work: () => Promise<TaskEnd>;
      try {
        work = await prepare(t.abort.signal);
      } catch (e) {
        this.tasks.delete(key);
        throw e;
      }
      void work()
        .then((end) => (t.outcome = { ok: true, skipped: end?.skipped }))
        .catch((e: Error) => {
          if (!(e instanceof BuildError)) this.app.log.warn({ err: e, task: key }, 'local runtime phase failed');
          t.outcome = { ok: false, reason: e.message };
        })
        .finally(() => this.app.jobs.wake());
    }
    if (!task.outcome) return { state: 'running', checkAfterMs: 100 };
    // The result is reported until the deployment moves on; then the task is forgotten.
    setTimeout(() => this.tasks.delete(key), 60_000).unref();
    const o = task.outcome;
    if (!o.ok) return { state: 'failed', reason: o.reason, lines: [{ message: o.reason, severity: 'error' }] };
    if (o.skipped) return { state: 'skipped', lines: [{ message: o.skipped }] };
    return { state: 'done', lines: [] };
  }

  /** Raises the abort signal of a deployment's running tasks (it was cancelled: their commands are killed). */
  abort(deploymentId: string): void {
    for (const [key, t] of this.tasks) if (key.startsWith(`${deploymentId}:`) && !t.outcome) t.abort.abort();
  }
}
