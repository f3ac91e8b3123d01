// Operator settings of the container host (docs/runtimes.md "Containers"): where the engine is and
// the base images auto-detected builds start from (real-world names; scripts/build-base-images.sh
// builds them offline).
import type { Config } from '../../../../shared/config.js';

export interface ContainerSettings {
  /** The engine's API (DOCKER_HOST): a unix socket or tcp://host:port (https: TLS, given by the swarm host's settings). */
  engine:
    | { socketPath: string }
    | { host: string; port: number; protocol: 'http' }
    | { host: string; port: number; protocol: 'https'; ca: string; cert?: string; key?: string };
  images: { node: string; python: string; go: string; static: string };
}

export function containerSettings(config: Config): ContainerSettings {
  const env = config.apps.env;
  const dockerHost = env.DOCKER_HOST || 'unix:///var/run/docker.sock';
  let engine: ContainerSettings['engine'];
  if (dockerHost.startsWith('unix://')) engine = { socketPath: dockerHost.slice('unix://'.length) };
  else {
    const tcp = /^tcp:\/\/([^:/]+):(\d+)\/?$/.exec(dockerHost);
    if (!tcp) throw new Error(`DOCKER_HOST "${dockerHost}" is neither unix:///<socket> nor tcp://<host>:<port>`);
    engine = { host: tcp[1]!, port: Number(tcp[2]), protocol: 'http' };
  }
  const python = env.SLIPWAY_CONTAINER_IMAGE_PYTHON || 'python:3.11-slim-bookworm';
  return {
    engine,
    images: {
      node: env.SLIPWAY_CONTAINER_IMAGE_NODE || 'node:20-bookworm-slim',
      python,
      go: env.SLIPWAY_CONTAINER_IMAGE_GO || 'golang:1.22-bookworm',
      // A static site is served by Python's http.server: the smallest server in the base images.
      static: env.SLIPWAY_CONTAINER_IMAGE_STATIC || python,
    },
  };
}
