// The environment a deployment's commands run with: the owner's variables (resolved, for the
// phase) and the system variables. The env-vars module owns the variables and provides this port
// at setup (`app.ports.environment`); the applications and static-sites modules, which it is
// built on, ask through it and never import env-vars.
import type { CallContext } from '../context.js';

/** What a deployment tells its system variables. */
export interface DeploymentFacts {
  id: string;
  initiated_by: string | null;
  trigger: string;
  commit_sha: string | null;
  branch: string | null;
  docker_image_url: string | null;
}

/** Resolved variables, and what went wrong resolving them (for the deployment's log; never thrown). */
export interface Environment {
  vars: Record<string, string>;
  problems: string[];
}

export interface EnvironmentPort {
  /** The injected `<PREFIX>_…` variables (and PORT) of a deployment of an application or site. */
  system(prefix: string, owner: { id: string; company_id: string; name: string }, d: DeploymentFacts): Record<string, string>;
  /** An application's variables for the phase (with the company's global ones), then `system`. */
  application(ctx: CallContext, a: { id: string; company_id: string }, system: Record<string, string>, phase: 'build' | 'runtime'): Promise<Environment>;
  /** A static site's build variables for a production or preview build of a branch, then `system`. */
  site(
    ctx: CallContext,
    s: { id: string; company_id: string },
    build: { is_preview: boolean; branch: string | null },
    system: Record<string, string>,
  ): Promise<Environment>;
}

declare module '../context.js' {
  interface Ports {
    environment: EnvironmentPort;
  }
}
