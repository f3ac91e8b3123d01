// Hibernation of applications on a real driver: an application with `hibernation_enabled`
// that the edge sent no request for `hibernate_after_seconds` has its processes stopped; the next
// request starts its current release again and is held until the instances accept HTTP (then
// served), or answered 503 with Retry-After when they are not ready within the ready timeout
// (SLIPWAY_APPS_READY_TIMEOUT_MS). Requests arriving while it wakes wait for the same start. The
// application's status does not change (the contract has no hibernated status); the runtime log
// says when it sleeps and wakes. A restart of Slipway starts every active application, asleep or
// not; idle ones fall asleep again after their idle time.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppContext } from '../../../shared/context.js';
import type { EdgeRequest } from '../../../shared/edge/index.js';
import { page, sendPage } from '../../../shared/edge/pages.js';
import { writeLogs } from '../../../shared/runtime/logs.js';
import type { ApplicationsTable } from '../storage.js';
import { serveFromGroup } from './edge.js';
import type { RealRuntime } from './real.js';
import { hibernatingApps } from './runtime-storage.js';

/** How often idle applications are looked for. */
const CHECK_MS = 1000;

export class Hibernation {
  /** When the edge last sent each application a request (or when it was first seen serving). */
  private lastSeen = new Map<string, number>();
  /** Applications this runtime put to sleep. */
  private asleep = new Set<string>();
  /** Applications starting because a request came (resolves true when ready). */
  private waking = new Map<string, Promise<boolean>>();
  private timer: NodeJS.Timeout | null = null;
  private checking = false;

  constructor(
    private app: AppContext,
    private rt: RealRuntime,
  ) {}

  private log(a: Pick<ApplicationsTable, 'id' | 'company_id'>, message: string) {
    return writeLogs(this.app.database.db, { companyId: a.company_id, appId: a.id, kind: 'runtime' }, [{ message }]).catch(() => {});
  }

  /** Answers a request for application `a`, waking it first when it is asleep. */
  async serve(a: ApplicationsTable, req: IncomingMessage, res: ServerResponse, info: EdgeRequest): Promise<void | 'refused'> {
    this.lastSeen.set(a.id, Date.now());
    if (this.asleep.has(a.id) && !a.is_suspended && !this.rt.servingGroup(a.id)) {
      if (!(await this.wake(a))) {
        if (info.fallible) return 'refused';
        return sendPage(res, 503, page('Starting', 'The application is waking up from hibernation. Please try again shortly.'), { 'retry-after': '5' });
      }
    } else {
      // A request that came in the last instants of a wake-up waits for it too.
      await this.waking.get(a.id);
    }
    this.lastSeen.set(a.id, Date.now());
    // A suspended application's instances are being stopped: they get no new request.
    return serveFromGroup(a.is_suspended ? undefined : this.rt.servingGroup(a.id), req, res, info.fallible);
  }

  /** A request for the application was answered (by a proxy in front too): it is not idle. */
  seen(appId: string): void {
    if (this.lastSeen.has(appId)) this.lastSeen.set(appId, Date.now());
  }

  private wake(a: ApplicationsTable): Promise<boolean> {
    let p = this.waking.get(a.id);
    if (p) return p;
    const timeoutMs = this.rt.settings.readyTimeoutMs;
    p = (async () => {
      await this.log(a, 'Waking from hibernation: a request came');
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<false>((r) => (timer = setTimeout(() => r(false), timeoutMs)));
      const started = this.rt.sync(a.id).then(
        () => true,
        () => false,
      );
      const ok = await Promise.race([started, timedOut]);
      clearTimeout(timer);
      if (this.rt.servingGroup(a.id)) this.asleep.delete(a.id);
      return ok && !!this.rt.servingGroup(a.id);
    })().finally(() => this.waking.delete(a.id));
    this.waking.set(a.id, p);
    return p;
  }

  /** Puts to sleep the serving applications idle for longer than their hibernation time. */
  private async check() {
    const ids = this.rt.servingApps();
    if (!ids.length) return;
    const rows = await hibernatingApps(this.app.database.db, ids);
    const now = Date.now();
    for (const a of rows) {
      const seen = this.lastSeen.get(a.id);
      if (seen === undefined) {
        this.lastSeen.set(a.id, now);
        continue;
      }
      if (now - seen < Number(a.hibernate_after_seconds) * 1000 || this.waking.has(a.id)) continue;
      if (await this.rt.hibernate(a.id)) {
        this.asleep.add(a.id);
        await this.log(a, `Hibernating: no request for ${a.hibernate_after_seconds} s; processes stopped until the next request`);
      }
    }
  }

  start(): void {
    this.timer = setInterval(() => {
      if (this.checking) return;
      this.checking = true;
      void this.check()
        .catch((e: Error) => this.app.log.warn({ err: e.message }, 'hibernation check failed'))
        .finally(() => (this.checking = false));
    }, CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
