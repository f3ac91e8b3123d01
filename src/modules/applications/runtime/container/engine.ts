// The container engine as the container host uses it (dockerode, loaded on first use): labels that
// name what a container is (for adoption after a restart of Slipway), the one place a container is
// created (image, command, environment, limits, published port, volumes, network),
// following a container's output as lines, and pulls with a registry login.
import { PassThrough, type Readable } from 'node:stream';
import type Docker from 'dockerode';
import { lazy } from '../../../../shared/lazy.js';
import { PROCESS_RESOURCE_TYPE_BY_ID } from '../../../resources/index.js';
import type { ContainerSettings } from './settings.js';

const load = lazy<typeof Docker>('dockerode');

export function engineClient(s: ContainerSettings): Docker {
  const DockerClass = load();
  return new DockerClass(s.engine);
}

/** The port a web instance listens on inside its container (given as PORT). */
export const CONTAINER_PORT = 8080;

/** Labels of every container Slipway manages. */
export const L = {
  managed: 'slipway.managed',
  /** The Slipway (its data directory) the container belongs to: several may share an engine. */
  owner: 'slipway.owner',
  app: 'slipway.app',
  process: 'slipway.process',
  release: 'slipway.release',
  deployment: 'slipway.deployment',
  instance: 'slipway.instance',
  type: 'slipway.type',
  command: 'slipway.command',
  port: 'slipway.port',
  run: 'slipway.run',
  /** On a volume: the application's volume it holds (its id). */
  volume: 'slipway.volume',
  /** On a network: the company whose containers it joins. */
  company: 'slipway.company',
} as const;

/** The immutable tag of a release's image. */
export const imageTag = (appId: string, deploymentId: string) => `slipway/${appId}:${deploymentId}`;

export interface ContainerSpec {
  image: string;
  /** The `slipway.owner` label's value. */
  owner: string;
  /** A shell command ('' for the image's own command). */
  command: string;
  env: Record<string, string>;
  labels: Record<string, string>;
  resourceTypeId?: string;
  /** The loopback port published to the container's CONTAINER_PORT (web instances). */
  hostPort?: number | null;
  /** Restarted by the engine when it exits (instances), with the engine's backoff. */
  restart: boolean;
  /** An interactive TTY (none here; runs and instances log lines). */
  tty?: boolean;
  /** Engine volumes (by name) mounted at their paths. */
  mounts?: { source: string; target: string }[];
  /** The network the container joins, reachable there under `aliases`. */
  network?: { name: string; aliases: string[] };
}

/**
 * Creates a container (not started). CPU and memory limits are the process's resource type's
 * (millicores as NanoCpus, MiB as Memory, no swap beyond it); volumes and the company's network
 * as the caller placed it.
 */
export async function createContainer(docker: Docker, s: ContainerSpec): Promise<Docker.Container> {
  const rt = s.resourceTypeId ? PROCESS_RESOURCE_TYPE_BY_ID.get(s.resourceTypeId) : undefined;
  const memory = rt ? rt.memory_limit * 1024 * 1024 : undefined;
  const port = `${CONTAINER_PORT}/tcp`;
  return docker.createContainer({
    Image: s.image,
    // A command runs through the image's shell, so `$PORT` and `&&` work as in a Procfile.
    ...(s.command ? { Entrypoint: ['/bin/sh', '-c'], Cmd: [s.command] } : {}),
    Env: Object.entries({ ...s.env, ...(s.hostPort ? { PORT: String(CONTAINER_PORT) } : {}) }).map(([k, v]) => `${k}=${v}`),
    Labels: { [L.managed]: '1', [L.owner]: s.owner, ...s.labels },
    ...(s.hostPort ? { ExposedPorts: { [port]: {} } } : {}),
    HostConfig: {
      ...(rt ? { NanoCpus: rt.cpu_limit * 1_000_000, Memory: memory, MemorySwap: memory } : {}),
      ...(s.hostPort ? { PortBindings: { [port]: [{ HostIp: '127.0.0.1', HostPort: String(s.hostPort) }] } } : {}),
      ...(s.mounts?.length ? { Mounts: s.mounts.map((m) => ({ Type: 'volume' as const, Source: m.source, Target: m.target })) } : {}),
      ...(s.network ? { NetworkMode: s.network.name } : {}),
      RestartPolicy: s.restart ? { Name: 'unless-stopped' } : { Name: 'no' },
      LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } },
    },
    ...(s.network ? { NetworkingConfig: { EndpointsConfig: { [s.network.name]: { Aliases: s.network.aliases } } } } : {}),
  });
}

/** Splits a stream into its non-blank lines (a last line without a newline too). */
function lines(stream: Readable, line: (text: string) => void): void {
  let partial = '';
  stream.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    for (const l of parts) if (l.trim()) line(l);
  });
  stream.on('end', () => {
    if (partial.trim()) line(partial);
  });
}

/**
 * Follows a container's output from `since` (unix seconds; 0: from its start) as lines, until it
 * stops; resolves when the output ended (the container stopped or was removed).
 */
export async function follow(docker: Docker, c: Docker.Container, since: number, line: (text: string, stream: 'stdout' | 'stderr') => void): Promise<void> {
  const stream = (await c.logs({ follow: true, stdout: true, stderr: true, since })) as unknown as Readable;
  const out = new PassThrough();
  const err = new PassThrough();
  lines(out, (l) => line(l, 'stdout'));
  lines(err, (l) => line(l, 'stderr'));
  docker.modem.demuxStream(stream, out, err);
  await new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
  out.end();
  err.end();
}

/** Follows an engine progress stream (pull, build) to its end; `event` sees each message; rejects on an error message. */
export function progress(
  docker: Docker,
  stream: NodeJS.ReadableStream,
  event: (e: { stream?: string; status?: string; error?: string }) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (err: Error | null, out: { error?: string }[]) => {
        const failed = err?.message ?? out?.find((e) => e.error)?.error;
        if (failed) reject(new Error(failed));
        else resolve();
      },
      event,
    );
  });
}

/** The registry host an image reference names (Docker Hub when its first part is not a host). */
export function registryOf(image: string): string {
  const first = image.split('/')[0]!;
  return image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost') ? first : 'https://index.docker.io/v1/';
}

/** Whether an error of the engine says the container (or image) is not there. */
export const missing = (e: unknown) => (e as { statusCode?: number }).statusCode === 404;
