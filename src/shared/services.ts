// The registry of service kinds (applications, databases, ...). Resource modules register the
// kinds they own, so cross-cutting features (projects, later load balancers and pipelines) can
// check that a service exists in the caller's company without depending on every module.
import type { CallContext } from './context.js';

export interface ServiceSummary {
  id: string;
  name: string;
  display_name: string;
  /** The region (cluster) the service runs in, for rules between services of one region. */
  cluster_id?: string | null;
}

export interface ServiceKind {
  /** The contract's service type name, e.g. `app`, `database`, `object-storage`. */
  type: string;
  /** The service `id` of the caller's company, if it exists. */
  find(ctx: CallContext, id: string): Promise<ServiceSummary | undefined>;
}

export class ServiceRegistry {
  private kinds = new Map<string, ServiceKind>();
  register(kind: ServiceKind): void {
    this.kinds.set(kind.type, kind);
  }
  get(type: string): ServiceKind | undefined {
    return this.kinds.get(type);
  }
  types(): string[] {
    return [...this.kinds.keys()];
  }
}
