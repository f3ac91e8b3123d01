// The container engine itself (scripts/start-container-engine.sh and scripts/build-base-images.sh),
// through the real dockerd with the docker CLI: the offline base images run and build what the
// official ones would, resource limits reach the container's cgroup, containers cannot reach SMTP
// ports (on the host or through it) while other ports stay open, and the local registry serves a
// private image to the right credentials only.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { engineSkip, testRegistry } from '../support/container-engine.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command; resolves with its exit code and output whatever the code. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

let dockerConfig: string;
/** The docker CLI with a client configuration of this file's own (registry logins stay here). */
const docker = (args: string[], config = dockerConfig) => run('docker', args, { ...process.env, DOCKER_CONFIG: config });

async function ok(args: string[], config?: string): Promise<string> {
  const r = await docker(args, config);
  assert.equal(r.code, 0, `docker ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** A shell line run in a container, printing `<port> open` or `<port> refused` for each port of host. */
const probe = (host: string, ports: number[]) =>
  `for p in ${ports.join(' ')}; do if timeout 5 bash -c "exec 3<>/dev/tcp/${host}/$p && head -c 2 <&3 >/dev/null" 2>/dev/null; then echo "$p open"; else echo "$p refused"; fi; done`;

/** A listener's connection handler: "ok", and a client leaving early is no error. */
const answer = (c: Socket) => {
  c.on('error', () => {});
  c.end('ok\n');
};

/** Listens on host:port answering "ok"; a port another process already holds is left to it. */
function listen(host: string, port: number): Promise<Server | null> {
  return new Promise((resolve, reject) => {
    const s = createServer(answer);
    s.once('error', (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' ? resolve(null) : reject(e)));
    s.listen(port, host, () => resolve(s));
  });
}

/** The host itself reaches host:port (so a refusal from a container is the block, not a missing listener). */
function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection({ host, port, timeout: 3000 }, () => {
      c.destroy();
      resolve(true);
    });
    c.on('error', () => resolve(false));
    c.on('timeout', () => (c.destroy(), resolve(false)));
  });
}

const SMTP = [25, 465, 587];

describe('container engine', { skip: await engineSkip() }, () => {
  before(() => void (dockerConfig = mkdtempSync(join(tmpdir(), 'slipway-docker-config-'))));
  after(() => rmSync(dockerConfig, { recursive: true, force: true }));

  it('runs the offline base images with the toolchains their names promise', async () => {
    assert.match(await ok(['run', '--rm', 'node:20-bookworm-slim', 'node', '--version']), /^v20\./);
    assert.match(await ok(['run', '--rm', 'node:20-bookworm-slim', 'npm', '--version']), /^\d+\.\d+\.\d+$/);
    assert.match(await ok(['run', '--rm', 'python:3.11-slim-bookworm', 'python', '--version']), /^Python 3\.11\./);
    assert.match(await ok(['run', '--rm', 'python:3.11-slim-bookworm', 'pip', '--version']), /python 3\.11/);
    assert.match(await ok(['run', '--rm', 'golang:1.22-bookworm', 'go', 'version']), /^go version go1\.\d+/);
    assert.match(await ok(['run', '--rm', 'debian:bookworm-slim', 'cat', '/etc/debian_version']), /^12\./);
  });

  it("builds Dockerfiles written for the official images' conventions", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-engine-build-'));
    const tag = `slipway-test/build-${randomBytes(4).toString('hex')}`;
    try {
      writeFileSync(join(dir, 'main.go'), 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("built with go") }\n');
      writeFileSync(join(dir, 'go.mod'), 'module example.com/hello\n\ngo 1.22\n');
      writeFileSync(join(dir, 'index.js'), 'console.log(`node ${process.version} in ${process.cwd()}`);\n');
      writeFileSync(
        join(dir, 'Dockerfile'),
        [
          'FROM golang:1.22-bookworm AS build',
          'WORKDIR /src',
          'COPY go.mod main.go ./',
          'RUN go build -o /out/hello . && test "$(go env GOPATH)" = /go',
          'FROM node:20-bookworm-slim',
          'WORKDIR /app',
          'COPY index.js .',
          'COPY --from=build /out/hello /usr/local/bin/hello',
          'USER node',
          'CMD ["sh", "-c", "hello && node index.js"]',
          '',
        ].join('\n'),
      );
      const build = await run('docker', ['build', '-q', '-t', tag, dir], { ...process.env, DOCKER_CONFIG: dockerConfig, DOCKER_BUILDKIT: '0' });
      assert.equal(build.code, 0, build.stderr);
      assert.match(await ok(['run', '--rm', tag]), /^built with go\nnode v20\.\S+ in \/app$/);
    } finally {
      await docker(['rmi', '-f', tag]);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("puts -m and --cpus limits in the container's cgroup", async () => {
    const out = await ok([
      'run',
      '--rm',
      '-m',
      '64m',
      '--cpus',
      '0.5',
      'debian:bookworm-slim',
      'cat',
      '/sys/fs/cgroup/memory/memory.limit_in_bytes',
      '/sys/fs/cgroup/cpu/cpu.cfs_quota_us',
      '/sys/fs/cgroup/cpu/cpu.cfs_period_us',
    ]);
    assert.deepEqual(out.split('\n').map(Number), [64 * 1024 * 1024, 50_000, 100_000]);
  });

  it('refuses SMTP ports to containers on the host and keeps other ports open', async () => {
    const gateway = await ok(['network', 'inspect', 'bridge', '--format', '{{(index .IPAM.Config 0).Gateway}}']);
    const other = createServer(answer);
    await new Promise<void>((resolve) => other.listen(0, gateway, resolve));
    const otherPort = (other.address() as { port: number }).port;
    const servers = await Promise.all(SMTP.map((p) => listen(gateway, p)));
    try {
      for (const p of SMTP) assert.ok(await reachable(gateway, p), `the host reaches its own ${gateway}:${p}`);
      const out = await ok(['run', '--rm', 'debian:bookworm-slim', 'bash', '-c', probe(gateway, [...SMTP, otherPort])]);
      assert.deepEqual(out.split('\n'), [...SMTP.map((p) => `${p} refused`), `${otherPort} open`]);
    } finally {
      for (const s of [other, ...servers]) s?.close();
    }
  });

  // Traffic to the outside world is forwarded, not delivered to the host: a network namespace behind
  // a veth pair stands for a remote mail server.
  it('refuses SMTP ports to containers through the host (forwarded)', { skip: process.getuid?.() === 0 ? false : 'needs root for ip netns' }, async () => {
    const id = randomBytes(3).toString('hex');
    const ns = `slw-${id}`;
    const [hostIf, nsIf] = [`slwh${id}`, `slwn${id}`];
    const octet = 4 * (1 + (parseInt(id, 16) % 60));
    const [hostIp, nsIp] = [`10.215.${octet}.1`, `10.215.${octet}.2`];
    const sh = async (line: string) => {
      const r = await run('sh', ['-c', line]);
      assert.equal(r.code, 0, `${line}: ${r.stderr}`);
    };
    let listener: ReturnType<typeof execFile> | undefined;
    try {
      await sh(
        `ip netns add ${ns} && ip link add ${hostIf} type veth peer name ${nsIf} && ip link set ${nsIf} netns ${ns} && ` +
          `ip addr add ${hostIp}/30 dev ${hostIf} && ip link set ${hostIf} up && ` +
          `ip netns exec ${ns} sh -c 'ip addr add ${nsIp}/30 dev ${nsIf} && ip link set ${nsIf} up && ip link set lo up && ip route add default via ${hostIp}'`,
      );
      const ports = [587, 8025];
      const script =
        `let up = 0; for (const p of ${JSON.stringify(ports)}) require('net').createServer((c) => { c.on('error', () => {}); c.end('ok\\n'); })` +
        `.listen(p, '${nsIp}', () => ++up === ${ports.length} && console.log('up'))`;
      listener = execFile('ip', ['netns', 'exec', ns, process.execPath, '-e', script]);
      await new Promise<void>((resolve, reject) => {
        listener!.stdout!.once('data', () => resolve());
        listener!.once('exit', (code) => reject(new Error(`the listener in ${ns} exited (${code})`)));
      });
      for (const p of ports) assert.ok(await reachable(nsIp, p), `the host reaches ${nsIp}:${p}`);
      const out = await ok(['run', '--rm', 'debian:bookworm-slim', 'bash', '-c', probe(nsIp, ports)]);
      assert.deepEqual(out.split('\n'), ['587 refused', '8025 open']);
    } finally {
      listener?.kill();
      await run('ip', ['netns', 'del', ns]);
      await run('ip', ['link', 'del', hostIf]);
    }
  });

  it(
    'serves a private image from the local registry to the right credentials only',
    { skip: testRegistry() ? false : 'SLIPWAY_TEST_REGISTRY and its user/password are not set' },
    async () => {
      const registry = testRegistry()!;
      const repo = `slipway-test/private-${randomBytes(4).toString('hex')}`;
      const image = `${registry.host}/${repo}:1`;
      const auth = (password: string) => Buffer.from(`${registry.user}:${password}`).toString('base64');
      const configWith = (password: string | null) => {
        const dir = mkdtempSync(join(tmpdir(), 'slipway-docker-config-'));
        writeFileSync(join(dir, 'config.json'), JSON.stringify({ auths: password === null ? {} : { [registry.host]: { auth: auth(password) } } }));
        return dir;
      };
      const [right, wrong, none] = [configWith(registry.password), configWith(`${registry.password}x`), configWith(null)];
      try {
        await ok(['tag', 'debian:bookworm-slim', image]);
        await ok(['push', image], right);
        await ok(['rmi', image]);
        for (const config of [wrong, none]) {
          const refused = await docker(['pull', image], config);
          assert.notEqual(refused.code, 0, 'the pull is refused');
          assert.match(refused.stderr, /unauthorized|authentication required|no basic auth credentials/i);
        }
        await ok(['pull', image], right);
        assert.match(await ok(['run', '--rm', image, 'cat', '/etc/debian_version'], right), /^12\./);
      } finally {
        await docker(['rmi', '-f', image]);
        // The manifest goes too, so the registry does not keep one repository per run.
        const headers = { authorization: `Basic ${auth(registry.password)}`, accept: 'application/vnd.docker.distribution.manifest.v2+json' };
        const head = await fetch(`http://${registry.host}/v2/${repo}/manifests/1`, { method: 'HEAD', headers }).catch(() => null);
        const digest = head?.headers.get('docker-content-digest');
        if (digest) await fetch(`http://${registry.host}/v2/${repo}/manifests/${digest}`, { method: 'DELETE', headers });
        for (const dir of [right, wrong, none]) rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
