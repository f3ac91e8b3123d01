// Operator settings of the swarm host (docs/scaling.md "Running on a swarm"): the manager's engine
// (SLIPWAY_SWARM_DOCKER_HOST, else DOCKER_HOST), builds' base images as the container host's, the
// registry the nodes pull release images from (SLIPWAY_SWARM_REGISTRY, with its login:
// SLIPWAY_SWARM_REGISTRY_USER and SLIPWAY_SWARM_REGISTRY_PASSWORD) or, without one, the nodes'
// own engines (SLIPWAY_SWARM_NODES, `<name>=<address>=<docker host>` space-separated, what
// scripts/start-swarm.sh prints: images are copied there, and a task's terminal and usage are read
// from its node's engine), TLS to the tcp:// ones (Docker's convention: SLIPWAY_SWARM_TLS_VERIFY
// and SLIPWAY_SWARM_CERT_PATH, else DOCKER_TLS_VERIFY and DOCKER_CERT_PATH), and how often tasks
// are listed.
import type { Config } from '../../../../shared/config.js';
import { intSetting } from '../../../../shared/config.js';
import { containerSettings, type ContainerSettings } from '../container/settings.js';

export interface SwarmSettings {
  /** The manager's engine (builds and the swarm's API) and the base images. */
  manager: ContainerSettings;
  /** host[:port] of a registry every node pulls from; null: images are copied to `nodes`. */
  registry: string | null;
  /**
   * The registry's login (basic auth), sent with each push and with each service's creation (the
   * X-Registry-Auth header: the manager hands it to the nodes that pull, as `docker service create
   * --with-registry-auth`); never logged, never in a service's env or labels. null: anonymous.
   */
  registryAuth: RegistryAuth | null;
  /**
   * The nodes' own engines, by hostname (the swarm's name of a node) and address: images are
   * copied there without a registry, and the terminal (`exec`) and CPU and memory (stats) of a task
   * are read there (the manager's API proxies neither).
   */
  nodes: { name: string; address: string; engine: ContainerSettings['engine'] }[];
  /** How often the tasks are listed (the edge follows them). */
  pollMs: number;
}

/** The login of the engine's X-Registry-Auth header. */
export interface RegistryAuth {
  username: string;
  password: string;
  serveraddress: string;
}

/** The registry's login: both settings or neither, and only with a registry. */
function registryAuth(env: Record<string, string | undefined>, registry: string | null): RegistryAuth | null {
  const username = env.SLIPWAY_SWARM_REGISTRY_USER ?? '';
  const password = env.SLIPWAY_SWARM_REGISTRY_PASSWORD ?? '';
  if (!username && !password) return null;
  if (!username || !password) {
    throw new Error(
      `${username ? 'SLIPWAY_SWARM_REGISTRY_USER' : 'SLIPWAY_SWARM_REGISTRY_PASSWORD'} is set without ${username ? 'SLIPWAY_SWARM_REGISTRY_PASSWORD' : 'SLIPWAY_SWARM_REGISTRY_USER'}`,
    );
  }
  if (!registry) throw new Error('SLIPWAY_SWARM_REGISTRY_USER and SLIPWAY_SWARM_REGISTRY_PASSWORD are the login of SLIPWAY_SWARM_REGISTRY, which is not set');
  return { username, password, serveraddress: registry };
}

/**
 * The container host's parsing of a DOCKER_HOST, for another engine, with its TLS (engineTls():
 * SLIPWAY_SWARM_TLS_VERIFY and SLIPWAY_SWARM_CERT_PATH, when set, win over DOCKER_'s, as
 * SLIPWAY_SWARM_DOCKER_HOST over DOCKER_HOST).
 */
function engineAt(config: Config, dockerHost: string): ContainerSettings {
  const env = config.apps.env;
  return containerSettings({
    ...config,
    apps: {
      ...config.apps,
      env: {
        ...env,
        DOCKER_HOST: dockerHost,
        DOCKER_TLS_VERIFY: env.SLIPWAY_SWARM_TLS_VERIFY || env.DOCKER_TLS_VERIFY,
        DOCKER_CERT_PATH: env.SLIPWAY_SWARM_CERT_PATH || env.DOCKER_CERT_PATH,
      },
    },
  });
}

export function swarmSettings(config: Config): SwarmSettings {
  const env = config.apps.env;
  const manager = engineAt(config, env.SLIPWAY_SWARM_DOCKER_HOST || env.DOCKER_HOST || 'unix:///var/run/docker.sock');
  const nodes = (env.SLIPWAY_SWARM_NODES ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((entry) => {
      const [name = '', address = '', dockerHost = ''] = entry.split('=');
      if (!name || !dockerHost) throw new Error(`SLIPWAY_SWARM_NODES entry "${entry}" is not <name>=<address>=<docker host>`);
      return { name, address, engine: engineAt(config, dockerHost).engine };
    });
  const registry = env.SLIPWAY_SWARM_REGISTRY?.replace(/\/+$/, '') || null;
  return { manager, registry, registryAuth: registryAuth(env, registry), nodes, pollMs: intSetting(env, 'SLIPWAY_SWARM_POLL_MS', 1000, 100) };
}
