// Operator settings of the swarm host (docs/scaling.md "Running on a swarm"): the manager's engine
// (SLIPWAY_SWARM_DOCKER_HOST, else DOCKER_HOST), builds' base images as the container host's, the
// registry the nodes pull release images from (SLIPWAY_SWARM_REGISTRY) or, without one, the nodes'
// own engines (SLIPWAY_SWARM_NODES, `<name>=<address>=<docker host>` space-separated, what
// scripts/start-swarm.sh prints: images are copied there, and a task's terminal and usage are read
// from its node's engine), TLS to the tcp:// ones (Docker's convention: SLIPWAY_SWARM_TLS_VERIFY
// and SLIPWAY_SWARM_CERT_PATH, else DOCKER_TLS_VERIFY and DOCKER_CERT_PATH), and how often tasks
// are listed.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
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

/**
 * TLS to an engine at tcp:// as the docker CLI does it: with DOCKER_TLS_VERIFY set (any non-empty
 * value) the engine's certificate must be signed by `<cert path>/ca.pem` and name the host,
 * and `cert.pem`/`key.pem` there, when present, are the client's certificate (an engine started with
 * --tlsverify refuses a client without one); the cert path is DOCKER_CERT_PATH, else ~/.docker.
 * The SLIPWAY_SWARM_ variables, when set, win over DOCKER_'s (as SLIPWAY_SWARM_DOCKER_HOST over
 * DOCKER_HOST). A unix socket is left as it is.
 */
export function engineTls(env: Record<string, string | undefined>, engine: ContainerSettings['engine']): ContainerSettings['engine'] {
  if ('socketPath' in engine) return engine;
  if (!(env.SLIPWAY_SWARM_TLS_VERIFY || env.DOCKER_TLS_VERIFY)) return engine;
  const dir = env.SLIPWAY_SWARM_CERT_PATH || env.DOCKER_CERT_PATH || join(homedir(), '.docker');
  const read = (file: string, required: boolean) => {
    try {
      return readFileSync(join(dir, file), 'utf8');
    } catch (e) {
      if (!required && (e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`TLS to the engine at ${engine.host}:${engine.port}: cannot read ${join(dir, file)} (${(e as Error).message})`, { cause: e });
    }
  };
  const ca = read('ca.pem', true)!;
  const cert = read('cert.pem', false);
  const key = read('key.pem', false);
  if (!cert !== !key) throw new Error(`TLS to the engine at ${engine.host}:${engine.port}: ${dir} holds one of cert.pem and key.pem without the other`);
  return { host: engine.host, port: engine.port, protocol: 'https', ca, ...(cert && key ? { cert, key } : {}) };
}

/** The container host's parsing of a DOCKER_HOST, for another engine, with TLS as configured. */
function engineAt(config: Config, dockerHost: string): ContainerSettings {
  const env = config.apps.env;
  const s = containerSettings({ ...config, apps: { ...config.apps, env: { ...env, DOCKER_HOST: dockerHost } } });
  return { ...s, engine: engineTls(env, s.engine) };
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
  return { manager, registry: env.SLIPWAY_SWARM_REGISTRY?.replace(/\/+$/, '') || null, nodes, pollMs: intSetting(env, 'SLIPWAY_SWARM_POLL_MS', 1000, 100) };
}
