// The container engine as the container host uses it (dockerode, loaded on first use): labels that
// name what a container is (for adoption after a restart of Slipway), the one place a container is
// created (image, command, environment, limits, published port, volumes, network),
// following a container's output as lines, pulls with a registry login, and the terminal (`exec`)
// and usage (stats) of one container, which the swarm host reuses on its nodes' engines.
import { PassThrough, type Readable } from 'node:stream';
import type Docker from 'dockerode';
import { lazy } from '../../../../shared/lazy.js';
import { PROCESS_RESOURCE_TYPE_BY_ID } from '../../../resources/index.js';
import type { ShellIO, ShellSession, ShellSpec } from '../../../../shared/runtime/shell.js';
import { BuildError } from '../../../../shared/runtime/build.js';
import type { Release } from '../release.js';
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

/** The image a release runs (a release of the local runtime has none: it must be deployed again). */
export function releaseImage(release: Release): string {
  if (!release.info.image) throw new BuildError(`Release ${release.id} is not an image (built by the local runtime); deploy again`);
  return release.info.image;
}

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
  /** `name:address` lines added to the container's /etc/hosts. */
  hosts?: string[];
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
      ...(s.hosts?.length ? { ExtraHosts: s.hosts } : {}),
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
export async function follow(
  docker: Docker,
  c: Docker.Container,
  since: number,
  line: (text: string, stream: 'stdout' | 'stderr') => void,
  signal?: AbortSignal,
): Promise<void> {
  const stream = (await c.logs({ follow: true, stdout: true, stderr: true, since })) as unknown as Readable;
  if (signal?.aborted) stream.destroy();
  else signal?.addEventListener('abort', () => stream.destroy(), { once: true });
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

/** A container's exits, in order, as the engine announced them. */
export interface Exits {
  /** The code of the next exit not yet taken (null: the engine's events ended, the code is unknown). */
  next(): Promise<number | null>;
  close(): void;
}

/**
 * A container's exit codes from the engine's `die` events, from `since` (unix seconds) on. Not a
 * wait's answer: Docker 20.10 reads the code a wait answers only after the exit was announced, by
 * when a container the engine restarts at once has a new state that says 0.
 */
export function exitCodes(docker: Docker, id: string, since: number): Exits {
  const codes: (number | null)[] = [];
  const waiting: ((code: number | null) => void)[] = [];
  let ended = false;
  let stream: Readable | null = null;
  const push = (code: number | null) => {
    const w = waiting.shift();
    if (w) w(code);
    else codes.push(code);
  };
  const end = () => {
    ended = true;
    for (const w of waiting.splice(0)) w(null);
  };
  docker.getEvents({ since, filters: { type: ['container'], container: [id], event: ['die'] } }).then((s) => {
    stream = s as unknown as Readable;
    if (ended) return stream.destroy();
    lines(stream, (l) => {
      let code = NaN;
      try {
        code = Number((JSON.parse(l) as { Actor?: { Attributes?: { exitCode?: string } } }).Actor?.Attributes?.exitCode);
      } catch {
        // Not an event the engine should send: the exit is told, its code unknown.
      }
      push(Number.isInteger(code) ? code : null);
    });
    stream.on('close', end);
    stream.on('error', end);
  }, end);
  return {
    next: () => (codes.length ? Promise.resolve(codes.shift()!) : ended ? Promise.resolve(null) : new Promise((r) => waiting.push(r))),
    close() {
      end();
      stream?.destroy();
    },
  };
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

/**
 * `exec` of a shell with a TTY in the container `find` gives (or a message saying why there is
 * none), with `env` added: the terminal of the container host and of the swarm host (there in a
 * task's container, through its node's engine).
 */
export function execShell(find: () => Promise<Docker.Container | string>, spec: ShellSpec, env: Record<string, string>, io: ShellIO): ShellSession {
  let stream: NodeJS.ReadWriteStream | null = null;
  let closed = false;
  const pending: string[] = [];
  void (async () => {
    const c = await find();
    if (typeof c === 'string') {
      io.output(`${spec.shell}: ${c}\n`);
      return io.exit(1);
    }
    const shell = spec.shell === 'bash' ? 'if command -v bash >/dev/null; then exec bash; else exec sh; fi' : 'exec sh';
    const exec = await c.exec({
      Cmd: ['/bin/sh', '-c', shell],
      Env: Object.entries({ ...env, PS1: `${spec.hostname}$ `, HOSTNAME: spec.hostname }).map(([k, v]) => `${k}=${v}`),
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: true,
    });
    const s = (await exec.start({ hijack: true, stdin: true, Tty: true })) as NodeJS.ReadWriteStream;
    stream = s;
    s.on('data', (chunk: Buffer) => io.output(chunk.toString()));
    s.on('end', () => {
      if (closed) return;
      void exec
        .inspect()
        .then((r) => io.exit(r.ExitCode ?? 0))
        .catch(() => io.exit(0));
    });
    if (closed) s.end();
    for (const text of pending.splice(0)) s.write(text);
  })().catch((e: Error) => {
    io.output(`${spec.shell}: ${e.message}\n`);
    io.exit(127);
  });
  return {
    input: (text) => (stream ? void stream.write(text) : void pending.push(text)),
    close: () => {
      closed = true;
      stream?.end();
    },
  };
}

/** A container's CPU (cores) and memory (bytes, without the page cache) from one engine stats read; `up` false when it gave no figures (stopped, gone). */
export async function containerUsage(c: Docker.Container): Promise<{ cpu: number; memory: number; up: boolean }> {
  const s = await c.stats({ stream: false }).catch(() => null);
  // A container that stopped meanwhile answers without figures.
  if (!s?.cpu_stats?.cpu_usage || !s.precpu_stats?.cpu_usage) return { cpu: 0, memory: 0, up: false };
  const cpuDelta = s.cpu_stats.cpu_usage.total_usage - s.precpu_stats.cpu_usage.total_usage;
  const systemDelta = (s.cpu_stats.system_cpu_usage ?? 0) - (s.precpu_stats.system_cpu_usage ?? 0);
  const cpus = s.cpu_stats.online_cpus || s.cpu_stats.cpu_usage.percpu_usage?.length || 1;
  const cpu = systemDelta > 0 ? (cpuDelta / systemDelta) * cpus : 0;
  const memory = (s.memory_stats.usage ?? 0) - ((s.memory_stats.stats as { cache?: number } | undefined)?.cache ?? 0);
  return { cpu: Math.max(0, cpu), memory: Math.max(0, memory), up: true };
}
