// The moments of an application's life that other modules react to, in the same transaction
// (`app.events.signal` / `app.events.on`, src/shared/events.ts). The processes module answers
// most of them (default processes, cron arming, job start policies); env-vars copies and deletes
// variables. None of them is recorded or delivered as a webhook event.
import type { ApplicationsTable } from './storage.js';

declare module '../../shared/events.js' {
  interface SignalMap {
    /** A new application row exists (create, or clone when `clonedFrom` is set). */
    'application.created': { application: ApplicationsTable; clonedFrom: ApplicationsTable | null };
    /** The application's processes stop: it was suspended, or its deletion started. */
    'application.stopped': { application: ApplicationsTable };
    /** The application's processes take effect: a deployment succeeded (its id) or the app was activated (null). */
    'application.released': { application: ApplicationsTable; deploymentId: string | null };
    /** The application is being removed for good (the deletion job, after the runtime tore it down). */
    'application.removed': { application: ApplicationsTable };
    /** A deployment started running (not when it was queued). */
    'deployment.started': { application: ApplicationsTable; deploymentId: string };
    /** A deployment failed. */
    'deployment.failed': { application: ApplicationsTable; deploymentId: string };
  }
}

export {};
