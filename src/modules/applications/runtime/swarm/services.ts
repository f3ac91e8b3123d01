// What a Swarm service of Slipway is (docs/scaling.md "Slipway on Swarm"): the spec of a process's
// service (replicas, resources, start-first updates with rollback, restart policy, placement by
// region, host-mode port the node picks, the company's overlay with the internal hostnames as
// aliases) or of a run (a replicated job), and the variables as a Swarm secret: the spec's Env is
// readable by anyone with the manager's API, so the application's variables are not in it; an
// entrypoint wrapper exports them from the mounted file before the command runs.
import { CONTAINER_PORT } from '../container/engine.js';
import { PROCESS_RESOURCE_TYPE_BY_ID } from '../../../resources/index.js';
import type { ServiceMount } from './volumes.js';

/** Where the variables' file is mounted in a task. */
export const ENV_FILE = '/run/secrets/slipway-env';
const PRELUDE = `set -a; . ${ENV_FILE}; set +a; `;

/** The variables as a file the shell sources (`KEY='value'`, quotes escaped); names a shell cannot take are left out. */
export function envFile(env: Record<string, string>): string {
  return Object.entries(env)
    .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
    .map(([k, v]) => `${k}='${v.replace(/'/g, `'\\''`)}'\n`)
    .join('');
}

/** The task's command: the shell command, or the image's own (entrypoint + cmd), after the variables are exported. */
export function wrapped(command: string, image: { Entrypoint?: string[] | null; Cmd?: string[] | null }): string[] {
  if (command) return ['/bin/sh', '-c', PRELUDE + command];
  const own = [...(image.Entrypoint ?? []), ...(image.Cmd ?? [])];
  if (!own.length) throw new Error('The image has no command and the process none');
  return ['/bin/sh', '-c', `${PRELUDE}exec "$@"`, 'slipway', ...own];
}

export interface ServiceSpecInput {
  name: string;
  image: string;
  command: string[];
  labels: Record<string, string>;
  secret: { id: string; name: string };
  resourceTypeId?: string;
  /** Replicas of a process; null: a run (one task, never restarted). */
  replicas: number | null;
  web: boolean;
  network: string;
  aliases: string[];
  constraints: string[];
  /** Volumes mounted in every task (an application with volumes is pinned to their node: volumes.ts). */
  mounts?: ServiceMount[];
  graceMs: number;
}

const SECOND = 1_000_000_000;

export function serviceSpec(s: ServiceSpecInput) {
  const rt = s.resourceTypeId ? PROCESS_RESOURCE_TYPE_BY_ID.get(s.resourceTypeId) : undefined;
  const limits = rt ? { NanoCPUs: rt.cpu_limit * 1_000_000, MemoryBytes: rt.memory_limit * 1024 * 1024 } : {};
  return {
    Name: s.name,
    Labels: s.labels,
    TaskTemplate: {
      ContainerSpec: {
        Image: s.image,
        Command: s.command,
        Env: s.web ? [`PORT=${CONTAINER_PORT}`] : [],
        Labels: s.labels,
        Secrets: [{ File: { Name: ENV_FILE.split('/').pop()!, UID: '0', GID: '0', Mode: 0o444 }, SecretID: s.secret.id, SecretName: s.secret.name }],
        StopGracePeriod: s.graceMs * 1_000_000,
        ...(s.mounts?.length ? { Mounts: s.mounts } : {}),
      },
      // Reservations as the limits: a node takes a task only where it has room for it.
      Resources: { Limits: limits, Reservations: limits },
      // Swarm has no backoff: a crashing instance is restarted once a second.
      RestartPolicy: s.replicas === null ? { Condition: 'none' } : { Condition: 'any', Delay: SECOND },
      Placement: { Constraints: s.constraints, Preferences: [{ Spread: { SpreadDescriptor: 'node.labels.slipway.region' } }] },
      Networks: [{ Target: s.network, Aliases: s.aliases }],
      LogDriver: { Name: 'json-file', Options: { 'max-size': '10m', 'max-file': '2' } },
    },
    // In-place changes (a forced restart, resources) start the new task before stopping the old;
    // a job has no updates (the swarm refuses an update config for one).
    ...(s.replicas === null
      ? { Mode: { ReplicatedJob: { MaxConcurrent: 1, TotalCompletions: 1 } } }
      : {
          Mode: { Replicated: { Replicas: s.replicas } },
          UpdateConfig: { Parallelism: 1, Order: 'start-first', FailureAction: 'rollback', Monitor: 5 * SECOND },
          RollbackConfig: { Parallelism: 1, Order: 'start-first', FailureAction: 'pause', Monitor: 5 * SECOND },
        }),
    // No IPVS here (no routing mesh, no virtual IP): DNS round robin inside, and a port each node
    // picks for its task, which the edge reads from the task list (a fixed port blocks rescheduling).
    EndpointSpec: s.web ? { Mode: 'dnsrr', Ports: [{ Protocol: 'tcp', TargetPort: CONTAINER_PORT, PublishMode: 'host' }] } : { Mode: 'dnsrr' },
  };
}
