// Operator settings of the swarm host (docs/scaling.md "Running on a swarm"): the manager's engine
// (SLIPWAY_SWARM_DOCKER_HOST, else DOCKER_HOST), builds' base images as the container host's, the
// registry the nodes pull release images from (SLIPWAY_SWARM_REGISTRY) or, without one, the nodes'
// own engines (SLIPWAY_SWARM_NODES, `<name>=<address>=<docker host>` space-separated, what
// scripts/start-swarm.sh prints: images are copied there, and a task's terminal and usage are read
// from its node's engine), and how often tasks are listed.
import type { Config } from '../../../../shared/config.js';
import { intSetting } from '../../../../shared/config.js';
import { containerSettings, type ContainerSettings } from '../container/settings.js';

export interface SwarmSettings {
  /** The manager's engine (builds and the swarm's API) and the base images. */
  manager: ContainerSettings;
  /** host[:port] of a registry every node pulls from; null: images are copied to `nodes`. */
  registry: string | null;
  /**
   * The nodes' own engines, by hostname (the swarm's name of a node) and address: images are
   * copied there without a registry, and the terminal (`exec`) and CPU and memory (stats) of a task
   * are read there (the manager's API proxies neither).
   */
  nodes: { name: string; address: string; engine: ContainerSettings['engine'] }[];
  /** How often the tasks are listed (the edge follows them). */
  pollMs: number;
}

/** The container host's parsing of a DOCKER_HOST, for another engine. */
const engineAt = (config: Config, dockerHost: string) =>
  containerSettings({ ...config, apps: { ...config.apps, env: { ...config.apps.env, DOCKER_HOST: dockerHost } } });

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
  return { manager, registry: env.SLIPWAY_SWARM_REGISTRY?.replace(/\/+$/, '') || null, nodes, pollMs: intSetting(env, 'SLIPWAY_SWARM_POLL_MS', 1000, 100) };
}
