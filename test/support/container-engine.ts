// The container engine the container runtime's suites run on (scripts/start-container-engine.sh):
// whether one answers at DOCKER_HOST, and the local registry's coordinates from the environment
// that script prints.
import { request } from 'node:http';

/** Where DOCKER_HOST points, as node:http options: a unix socket or a tcp host and port. */
export function engineAddress(dockerHost = process.env.DOCKER_HOST): { socketPath: string } | { host: string; port: number } | null {
  if (!dockerHost) return null;
  if (dockerHost.startsWith('unix://')) return { socketPath: dockerHost.slice('unix://'.length) };
  const tcp = /^tcp:\/\/([^:/]+):(\d+)\/?$/.exec(dockerHost);
  return tcp ? { host: tcp[1]!, port: Number(tcp[2]) } : null;
}

/** True when the engine answers its /_ping with OK. */
export function enginePing(timeoutMs = 3000): Promise<boolean> {
  const address = engineAddress();
  if (!address) return Promise.resolve(false);
  return new Promise((resolve) => {
    const req = request({ ...address, path: '/_ping', timeout: timeoutMs }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(res.statusCode === 200 && body === 'OK'));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

/**
 * The describe() skip option: a reason when no engine answers at DOCKER_HOST, unless
 * SLIPWAY_REQUIRE_CONTAINERS=1 (then the tests run and fail).
 */
export async function engineSkip(): Promise<string | false> {
  if (process.env.SLIPWAY_REQUIRE_CONTAINERS === '1' || (await enginePing())) return false;
  return process.env.DOCKER_HOST
    ? `no container engine answers at DOCKER_HOST=${process.env.DOCKER_HOST} (SLIPWAY_REQUIRE_CONTAINERS=1 makes this a failure)`
    : 'DOCKER_HOST is not set (eval "$(scripts/start-container-engine.sh)"; SLIPWAY_REQUIRE_CONTAINERS=1 makes this a failure)';
}

export interface TestRegistry {
  /** host:port, the prefix of an image name pushed there */
  host: string;
  user: string;
  password: string;
}

/** The local registry the engine script started (SLIPWAY_TEST_REGISTRY and its user/password), or null. */
export function testRegistry(): TestRegistry | null {
  const { SLIPWAY_TEST_REGISTRY: host, SLIPWAY_TEST_REGISTRY_USER: user, SLIPWAY_TEST_REGISTRY_PASSWORD: password } = process.env;
  return host && user && password ? { host, user, password } : null;
}
