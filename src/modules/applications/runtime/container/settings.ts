// Operator settings of the container host (docs/runtimes.md "Containers"): where the engine is
// (DOCKER_HOST, with TLS to a tcp:// one by Docker's convention: DOCKER_TLS_VERIFY and
// DOCKER_CERT_PATH; the swarm host reads its engines through the same code) and the base images
// auto-detected builds start from (real-world names; scripts/build-base-images.sh builds them
// offline).
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../../../shared/config.js';

export interface ContainerSettings {
  /** The engine's API (DOCKER_HOST): a unix socket or tcp://host:port (https: TLS, engineTls()). */
  engine:
    | { socketPath: string }
    | { host: string; port: number; protocol: 'http' }
    | { host: string; port: number; protocol: 'https'; ca: string; cert?: string; key?: string };
  images: { node: string; python: string; go: string; static: string };
}

/**
 * TLS to an engine at tcp:// as the docker CLI does it: with DOCKER_TLS_VERIFY set (any non-empty
 * value) the engine's certificate must be signed by `<cert path>/ca.pem` and name the host,
 * and `cert.pem`/`key.pem` there, when present, are the client's certificate (an engine started with
 * --tlsverify refuses a client without one); the cert path is DOCKER_CERT_PATH, else ~/.docker.
 * A unix socket is left as it is.
 */
export function engineTls(env: Record<string, string | undefined>, engine: ContainerSettings['engine']): ContainerSettings['engine'] {
  if ('socketPath' in engine) return engine;
  if (!env.DOCKER_TLS_VERIFY) return engine;
  const dir = env.DOCKER_CERT_PATH || join(homedir(), '.docker');
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

export function containerSettings(config: Config): ContainerSettings {
  const env = config.apps.env;
  const dockerHost = env.DOCKER_HOST || 'unix:///var/run/docker.sock';
  let engine: ContainerSettings['engine'];
  if (dockerHost.startsWith('unix://')) engine = { socketPath: dockerHost.slice('unix://'.length) };
  else {
    const tcp = /^tcp:\/\/([^:/]+):(\d+)\/?$/.exec(dockerHost);
    if (!tcp) throw new Error(`DOCKER_HOST "${dockerHost}" is neither unix:///<socket> nor tcp://<host>:<port>`);
    engine = engineTls(env, { host: tcp[1]!, port: Number(tcp[2]), protocol: 'http' });
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
