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
  /** The system hostname the service was given at creation, where its kind has one (the domains module registers it). */
  hostname?: string | null;
}

/** What a module registers for a kind of service it owns. */
export interface ServiceKindSource {
  /** The contract's service type name, e.g. `app`, `database`, `object-storage`. */
  type: string;
  /** Those of the services `ids` (one or more) that exist in the caller's company, in one query, in any order. */
  summaries(ctx: CallContext, ids: readonly string[]): Promise<ServiceSummary[]>;
  /** Domains under which the system names services of this kind (nobody may claim names there). */
  systemSuffixes?: readonly string[];
}

export interface ServiceKind extends ServiceKindSource {
  /** The service `id` of the caller's company, if it exists. */
  find(ctx: CallContext, id: string): Promise<ServiceSummary | undefined>;
}

export class ServiceRegistry {
  private kinds = new Map<string, ServiceKind>();
  private others = new Map<string, ServiceKind['find']>();
  register(source: ServiceKindSource): void {
    this.kinds.set(source.type, { ...source, find: async (ctx, id) => (await source.summaries(ctx, [id]))[0] });
  }
  /** A resource that is not a service (projects, registry credentials), for reference checks. */
  registerResource(type: string, find: ServiceKind['find']): void {
    this.others.set(type, find);
  }
  /** How to find a resource of `type` (a service kind or another resource) in the caller's company. */
  resolver(type: string): ServiceKind['find'] | undefined {
    return this.kinds.get(type)?.find ?? this.others.get(type);
  }
  get(type: string): ServiceKind | undefined {
    return this.kinds.get(type);
  }
  types(): string[] {
    return [...this.kinds.keys()];
  }
  /** Every kind's `systemSuffixes`. */
  systemSuffixes(): string[] {
    return [...this.kinds.values()].flatMap((k) => k.systemSuffixes ?? []);
  }
}
