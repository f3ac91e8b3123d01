// TLS to the engines (Docker's convention, docs/scaling.md "Running on a swarm", docs/runtimes.md
// "Containers"): with DOCKER_TLS_VERIFY (or SLIPWAY_SWARM_TLS_VERIFY) the tcp:// engines of
// SLIPWAY_SWARM_DOCKER_HOST and SLIPWAY_SWARM_NODES are reached over https with DOCKER_CERT_PATH's
// ca.pem, cert.pem and key.pem; unix sockets stay as they are. The container runtime's DOCKER_HOST
// goes through the same code (container/settings.ts engineTls). Then a real engine: a dockerd (no swarm, no networks of its own)
// listening on tcp://127.0.0.1 with --tlsverify and a CA made here with openssl answers Slipway's
// client built from those settings, and refuses it without the client's certificate, with another
// CA's, or without TLS.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/shared/config.js';
import { swarmSettings } from '../../src/modules/applications/runtime/swarm/settings.js';
import { engineClient } from '../../src/modules/applications/runtime/container/engine.js';
import { containerSettings } from '../../src/modules/applications/runtime/container/settings.js';
import { waitFor } from '../helpers/util.js';

const openssl = (cwd: string, ...args: string[]) => execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });

/** A CA in `dir` (ca.pem, ca-key.pem), and certificates it signs: the engine's (for 127.0.0.1) and a client's. */
function makeCa(dir: string): void {
  mkdirSync(dir, { recursive: true });
  openssl(dir, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=slipway test CA');
  const sign = (name: string, subject: string, ext: string) => {
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(dir, 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}-key.pem`, '-out', `${name}.csr`, '-subj', subject);
    openssl(
      dir,
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca-key.pem',
      '-CAcreateserial',
      '-out',
      `${name}-cert.pem`,
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
    );
  };
  sign('server', '/CN=127.0.0.1', 'subjectAltName = IP:127.0.0.1\nextendedKeyUsage = serverAuth\n');
  sign('client', '/CN=slipway', 'extendedKeyUsage = clientAuth\n');
}

/** A cert path as the docker CLI reads one: ca.pem, and the client's cert.pem/key.pem when `client`. */
function certPath(dir: string, ca: string, client: string | null): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'ca.pem'), readFileSync(join(ca, 'ca.pem')));
  if (client) {
    writeFileSync(join(dir, 'cert.pem'), readFileSync(join(client, 'client-cert.pem')));
    writeFileSync(join(dir, 'key.pem'), readFileSync(join(client, 'client-key.pem')));
  }
  return dir;
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });

const settingsOf = (env: Record<string, string>) => swarmSettings(loadConfig({}, { SLIPWAY_RUNTIME: 'swarm', ...env }));
const containerOf = (env: Record<string, string>) => containerSettings(loadConfig({}, { SLIPWAY_RUNTIME: 'container', ...env }));

describe('swarm runtime: TLS to the engines (settings)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-swarm-tls-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const certs = join(dir, 'certs');
  before(() => {
    mkdirSync(certs);
    writeFileSync(join(certs, 'ca.pem'), 'CA');
    writeFileSync(join(certs, 'cert.pem'), 'CERT');
    writeFileSync(join(certs, 'key.pem'), 'KEY');
  });
  const nodes = `n1=10.0.0.1=tcp://10.0.0.1:2376 n2=10.0.0.2=unix:///run/n2.sock`;

  it('DOCKER_TLS_VERIFY and DOCKER_CERT_PATH make every tcp:// engine https with the ca, cert and key; unix sockets stay', () => {
    const s = settingsOf({ SLIPWAY_SWARM_DOCKER_HOST: 'tcp://10.0.0.1:2376', SLIPWAY_SWARM_NODES: nodes, DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: certs });
    const tls = { host: '10.0.0.1', port: 2376, protocol: 'https', ca: 'CA', cert: 'CERT', key: 'KEY' };
    assert.deepEqual(s.manager.engine, tls);
    assert.deepEqual(s.nodes[0]!.engine, tls);
    assert.deepEqual(s.nodes[1]!.engine, { socketPath: '/run/n2.sock' });
    const client = engineClient(s.manager) as unknown as { modem: { protocol: string; ca: string; cert: string; key: string } };
    assert.equal(client.modem.protocol, 'https');
    assert.deepEqual([client.modem.ca, client.modem.cert, client.modem.key], ['CA', 'CERT', 'KEY']);
  });

  it('without DOCKER_TLS_VERIFY a tcp:// engine is plain http; SLIPWAY_SWARM_TLS_VERIFY and SLIPWAY_SWARM_CERT_PATH win over DOCKER_', () => {
    assert.deepEqual(settingsOf({ SLIPWAY_SWARM_DOCKER_HOST: 'tcp://10.0.0.1:2375', DOCKER_CERT_PATH: certs }).manager.engine, {
      host: '10.0.0.1',
      port: 2375,
      protocol: 'http',
    });
    const s = settingsOf({
      SLIPWAY_SWARM_DOCKER_HOST: 'tcp://10.0.0.1:2376',
      SLIPWAY_SWARM_TLS_VERIFY: '1',
      SLIPWAY_SWARM_CERT_PATH: certs,
      DOCKER_CERT_PATH: '/nowhere',
    });
    assert.equal((s.manager.engine as { protocol: string }).protocol, 'https');
  });

  it("the container runtime's DOCKER_HOST at tcp:// with DOCKER_TLS_VERIFY is https with the ca, cert and key; without it plain http", () => {
    const s = containerOf({ DOCKER_HOST: 'tcp://10.0.0.9:2376', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: certs });
    assert.deepEqual(s.engine, { host: '10.0.0.9', port: 2376, protocol: 'https', ca: 'CA', cert: 'CERT', key: 'KEY' });
    const client = engineClient(s) as unknown as { modem: { protocol: string; ca: string; cert: string; key: string } };
    assert.equal(client.modem.protocol, 'https');
    assert.deepEqual([client.modem.ca, client.modem.cert, client.modem.key], ['CA', 'CERT', 'KEY']);
    assert.deepEqual(containerOf({ DOCKER_HOST: 'tcp://10.0.0.9:2375', DOCKER_CERT_PATH: certs }).engine, { host: '10.0.0.9', port: 2375, protocol: 'http' });
    assert.deepEqual(containerOf({ DOCKER_HOST: 'unix:///run/x.sock', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: certs }).engine, { socketPath: '/run/x.sock' });
    assert.throws(
      () => containerOf({ DOCKER_HOST: 'tcp://10.0.0.9:2376', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: join(dir, 'missing') }),
      /cannot read .*ca\.pem/,
    );
  });

  it('a cert path without ca.pem, or with one of cert.pem and key.pem, is refused at start', () => {
    assert.throws(
      () => settingsOf({ SLIPWAY_SWARM_DOCKER_HOST: 'tcp://10.0.0.1:2376', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: join(dir, 'missing') }),
      /cannot read .*ca\.pem/,
    );
    const half = join(dir, 'half');
    mkdirSync(half);
    writeFileSync(join(half, 'ca.pem'), 'CA');
    writeFileSync(join(half, 'cert.pem'), 'CERT');
    assert.throws(() => settingsOf({ SLIPWAY_SWARM_DOCKER_HOST: 'tcp://10.0.0.1:2376', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: half }), /without the other/);
  });
});

const canRunEngine = existsSync('/usr/sbin/dockerd') && process.getuid?.() === 0;

describe('swarm runtime: TLS to a real engine started with --tlsverify', { skip: canRunEngine ? false : 'needs root and /usr/sbin/dockerd' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-swarm-tls-engine-'));
  let engine: ChildProcess | null = null;
  let port = 0;
  // A bridge of its own: dockerd started with `--bridge none` deletes the machine's docker0 (which
  // the container engine's containers are on), so it gets this one instead, and no iptables rules.
  const bridge = `sltls${process.pid % 100000}`;

  before(
    async () => {
      makeCa(join(dir, 'ca'));
      makeCa(join(dir, 'other'));
      port = await freePort();
      execFileSync('ip', ['link', 'add', bridge, 'type', 'bridge']);
      execFileSync('ip', ['addr', 'add', '10.231.0.1/24', 'dev', bridge]);
      writeFileSync(join(dir, 'daemon.json'), JSON.stringify({ 'deprecated-key-path': join(dir, 'key.json') }));
      engine = spawn(
        '/usr/sbin/dockerd',
        [
          '--config-file',
          join(dir, 'daemon.json'),
          '--data-root',
          join(dir, 'data'),
          '--exec-root',
          join(dir, 'exec'),
          '--pidfile',
          join(dir, 'dockerd.pid'),
          '-H',
          `unix://${join(dir, 'docker.sock')}`,
          '-H',
          `tcp://127.0.0.1:${port}`,
          '--tlsverify',
          '--tlscacert',
          join(dir, 'ca', 'ca.pem'),
          '--tlscert',
          join(dir, 'ca', 'server-cert.pem'),
          '--tlskey',
          join(dir, 'ca', 'server-key.pem'),
          '--bridge',
          bridge,
          '--iptables=false',
          '--ip6tables=false',
        ],
        { stdio: ['ignore', 'ignore', 'ignore'], detached: true },
      );
      await waitFor(
        'the engine to answer on its socket',
        () => {
          try {
            execFileSync('docker', ['-H', `unix://${join(dir, 'docker.sock')}`, 'version'], { stdio: 'ignore' });
            return true;
          } catch {
            return undefined;
          }
        },
        60_000,
        250,
      );
    },
    { timeout: 120_000 },
  );

  after(async () => {
    if (engine?.pid && engine.exitCode === null) {
      const exited = new Promise((r) => engine!.once('exit', r));
      process.kill(engine.pid, 'SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      if (engine.exitCode === null) process.kill(-engine.pid, 'SIGKILL');
    }
    // What the engine mounted under its root goes before its directory.
    for (const m of readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[1] ?? '')
      .filter((p) => p.startsWith(dir))
      .reverse())
      try {
        execFileSync('umount', ['-l', m], { stdio: 'ignore' });
      } catch {
        // Gone already.
      }
    rmSync(dir, { recursive: true, force: true });
    try {
      execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    } catch {
      // Never made.
    }
  });

  const client = (env: Record<string, string>) => engineClient(settingsOf({ SLIPWAY_SWARM_DOCKER_HOST: `tcp://127.0.0.1:${port}`, ...env }).manager);

  it("Slipway's client with the CA and the client's certificate reads the engine", async () => {
    const certs = certPath(join(dir, 'good'), join(dir, 'ca'), join(dir, 'ca'));
    const v = await client({ DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: certs }).version();
    assert.ok(v.ApiVersion, JSON.stringify(v));
  });

  it("the container runtime's client (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) reads the engine; without TLS it is refused", async () => {
    const certs = certPath(join(dir, 'container'), join(dir, 'ca'), join(dir, 'ca'));
    const container = (env: Record<string, string>) => engineClient(containerOf({ DOCKER_HOST: `tcp://127.0.0.1:${port}`, ...env }));
    const v = await container({ DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: certs }).version();
    assert.ok(v.ApiVersion, JSON.stringify(v));
    await assert.rejects(container({ DOCKER_CERT_PATH: certs }).version(), /HTTP request to an HTTPS server/);
  });

  it("the engine refuses Slipway's client without a client certificate, with another CA's, and without TLS", async () => {
    const noCert = certPath(join(dir, 'no-cert'), join(dir, 'ca'), null);
    const refusal = async (env: Record<string, string>) => {
      const e = await client(env)
        .version()
        .then(() => null)
        .catch((err: Error) => err);
      assert.ok(e, `refused with ${JSON.stringify(env)}`);
      return e.message;
    };
    // The engine's TLS alert: no client certificate.
    assert.match(await refusal({ DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: noCert }), /bad certificate|certificate required/);
    // Slipway's side: the engine's certificate is not of the CA it trusts.
    const otherCa = certPath(join(dir, 'other-ca'), join(dir, 'other'), join(dir, 'other'));
    assert.match(await refusal({ DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: otherCa }), /unable to verify|self.signed|certificate/);
    assert.match(await refusal({}), /HTTP request to an HTTPS server/);
  });
});
