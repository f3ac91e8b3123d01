// Pebble, Let's Encrypt's test ACME server, for the edge's ACME suite: built by
// scripts/install-pebble.sh into a cache directory; its challenge test server answers DNS (every
// name 127.0.0.1 unless told otherwise) and nothing else, so that Pebble validates HTTP-01 against
// the edge's own HTTP port.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { get } from 'node:https';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../helpers/util.js';
import { freePort } from './support.js';

const CACHE = process.env.SLIPWAY_PEBBLE_CACHE || join(homedir(), '.cache', 'slipway', 'pebble');
const BIN = join(CACHE, 'bin');

/** The Pebble module's test certificates (the directory's TLS), or null when it was not built. */
function pebbleCerts(): string | null {
  const mod = join(CACHE, 'pkg', 'mod', 'github.com', 'letsencrypt', 'pebble');
  if (!existsSync(mod)) return null;
  const v = readdirSync(mod)
    .filter((d) => d.startsWith('v2@'))
    .sort()
    .at(-1);
  return v ? join(mod, v, 'test', 'certs') : null;
}

/** The describe() skip option: a reason when Pebble is missing, unless SLIPWAY_REQUIRE_PEBBLE=1 (then the tests run and fail). */
export function pebbleSkip(): string | false {
  if ((existsSync(join(BIN, 'pebble')) && existsSync(join(BIN, 'pebble-challtestsrv')) && pebbleCerts()) || process.env.SLIPWAY_REQUIRE_PEBBLE === '1')
    return false;
  return 'Pebble is not built (scripts/install-pebble.sh; SLIPWAY_REQUIRE_PEBBLE=1 makes this a failure)';
}

export interface Pebble {
  /** The ACME directory URL. */
  directory: string;
  /** The CA bundle of the directory's TLS (SLIPWAY_EDGE_ACME_CA_FILE). */
  caFile: string;
  /** The root Pebble's certificates chain to (PEM), for verifying the edge's handshakes. */
  root(): Promise<string>;
  /** Makes the challenge test server answer `host`'s A queries with `address` (so validation goes there). */
  pointAt(host: string, address: string): Promise<void>;
  stop(): Promise<void>;
}

function started(child: ChildProcess, what: string, ready: RegExp): Promise<void> {
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      if (ready.test(out)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${what} exited with ${code}:\n${out}`)));
  });
}

const stopChild = (c: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    c.once('exit', () => resolve());
    c.kill('SIGTERM');
  });

/** Starts pebble-challtestsrv and Pebble, validating HTTP-01 on `httpPort` (the edge's plain HTTP port). */
export async function startPebble(httpPort: number): Promise<Pebble> {
  const certs = pebbleCerts();
  if (!certs) throw new Error('Pebble is not built: run scripts/install-pebble.sh');
  const dir = mkdtempSync(join(tmpdir(), 'slipway-pebble-'));
  const [dns, challMgmt, listen, mgmt, tlsPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const chall = spawn(
    join(BIN, 'pebble-challtestsrv'),
    [
      '-defaultIPv4',
      '127.0.0.1',
      '-defaultIPv6',
      '',
      '-dnsserver',
      `127.0.0.1:${dns}`,
      '-management',
      `127.0.0.1:${challMgmt}`,
      '-http01',
      '',
      '-https01',
      '',
      '-tlsalpn01',
      '',
      '-doh',
      '',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const children = [chall];
  try {
    await started(chall, 'pebble-challtestsrv', /Starting management server/);
    const config = join(dir, 'pebble.json');
    writeFileSync(
      config,
      JSON.stringify({
        pebble: {
          listenAddress: `127.0.0.1:${listen}`,
          managementListenAddress: `127.0.0.1:${mgmt}`,
          certificate: join(certs, 'localhost', 'cert.pem'),
          privateKey: join(certs, 'localhost', 'key.pem'),
          httpPort,
          tlsPort,
          ocspResponderURL: '',
          externalAccountBindingRequired: false,
          retryAfter: { authz: 1, order: 1 },
        },
      }),
    );
    const pebble = spawn(join(BIN, 'pebble'), ['-config', config, '-dnsserver', `127.0.0.1:${dns}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0' },
    });
    children.push(pebble);
    await started(pebble, 'pebble', /ACME directory available at/);
  } catch (e) {
    await Promise.all(children.map(stopChild));
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const caFile = join(certs, 'pebble.minica.pem');
  return {
    directory: `https://127.0.0.1:${listen}/dir`,
    caFile,
    root: () =>
      new Promise((resolve, reject) => {
        get({ host: '127.0.0.1', port: mgmt, path: '/roots/0', servername: 'localhost', ca: readFileSync(caFile) }, (r) => {
          let body = '';
          r.on('data', (c: Buffer) => (body += c.toString()));
          r.on('end', () => (r.statusCode === 200 ? resolve(body) : reject(new Error(`pebble /roots/0: ${r.statusCode}`))));
        }).on('error', reject);
      }),
    pointAt: async (host, address) => {
      await waitFor('challtestsrv to take the record', () => challtest(challMgmt, '/add-a', { host: `${host}.`, addresses: [address] }), 5_000, 50);
    },
    stop: async () => {
      await Promise.all(children.map(stopChild));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function challtest(port: number, path: string, body: object): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-type': 'application/json' } }, (r) => {
      r.resume();
      r.on('end', () => resolve(r.statusCode === 200));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
