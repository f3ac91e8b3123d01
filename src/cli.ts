// The `slipway` command: `serve` runs the API server; `admin ...` runs operator actions
// directly against the configured database.
import { pipeline } from 'node:stream/promises';
import { setFlagsFromString } from 'node:v8';
import pino from 'pino';
import { loadConfig, type Flags } from './shared/config.js';
import { createAppContext } from './shared/context.js';
import { validateProgression } from './shared/runtime/simulation.js';
import { migrate, openDatabase } from './shared/db/index.js';
import { ApiError } from './shared/errors.js';
import { createServer } from './server.js';
import { exportSnapshot, importSnapshot } from './shared/snapshots/index.js';
import { snapshotObjects } from './modules/object-storage/index.js';
import * as accounts from './modules/accounts/service.js';
import * as devices from './modules/device-codes/service.js';
import { moduleMigrations, modules, resetTables } from './modules/index.js';

const HELP = `slipway — an open control plane for the Hosting Platform REST API v3

Usage:
  slipway serve [options]          Serve the API (default: http://127.0.0.1:8080/v3)
  slipway admin <command> [opts]   Operator actions on the configured database
  slipway --help                   This help

Serve options (environment variable in brackets):
  --port <n>              Port to listen on (PORT, default 8080)
  --host <addr>           Address to bind (HOST, default 127.0.0.1)
  --data-dir <dir>        Where the SQLite file, secret key and TLS files live (DATA_DIR, default ./data)
  --database-url <url>    Use PostgreSQL instead of SQLite (DATABASE_URL)
  --log-level <level>     fatal|error|warn|info|debug|trace|silent (LOG_LEVEL, default info)
  --tls self-signed       Serve HTTPS with a local CA and localhost certificate kept in the data dir
  --tls-cert <file>       Serve HTTPS with this certificate (SLIPWAY_TLS_CERT) ...
  --tls-key <file>        ... and this private key (SLIPWAY_TLS_KEY)
  --production            Production mode (NODE_ENV=production): plain HTTP requests are refused
  --trust-proxy           Trust X-Forwarded-* headers from a proxy (SLIPWAY_TRUST_PROXY=1)
  --operator-token <t>    Enable the operator surface /_admin with this bearer token (SLIPWAY_OPERATOR_TOKEN)
  --public-url <url>      Base URL clients use, if different from the listen address (SLIPWAY_PUBLIC_URL)
  --runtime local         Build and run applications for real on this machine (SLIPWAY_RUNTIME; default simulated;
                          SLIPWAY_EDGE_PORT, SLIPWAY_BASE_DOMAIN: docs/runtimes.md "Real applications");
                          container: as containers of the engine at DOCKER_HOST (docs/runtimes.md "Containers")

Other environment: SLIPWAY_BOOTSTRAP_TOKEN (fixed token for the first-start admin key),
SLIPWAY_SECRET_KEY (encryption key for secrets at rest), SLIPWAY_BRAND_PREFIX (default svl),
SLIPWAY_RATE_<TIER> (override a rate limit: SERVICE_CREATION, SERVICE_MUTATION, DEPLOYMENT,
GENERAL_WRITE, LOGS, READ, UNAUTHENTICATED).

Real databases (docs/runtimes.md "Real databases"; unset: simulated): SLIPWAY_DB_POSTGRESQL_URL,
SLIPWAY_DB_MYSQL_URL (or *_URL_FILE), SLIPWAY_DB_REDIS_BIN, SLIPWAY_DB_REDIS_PORTS, and host/port
overrides SLIPWAY_DB_<ENGINE>_HOST/_PORT/_EXTERNAL_HOST/_EXTERNAL_PORT.

Admin commands (take --data-dir / --database-url like serve):
  admin list-companies
  admin create-company --name <name> [--role <role>]        also creates an admin key, printed once
  admin create-user --company <id> --email <e> [--full-name <n>]
  admin create-key --company <id> --role <role> [--name <n>] roles: "Company Admin", "Company Developer",
                                                            "Company Billing", "Company Viewer"
  admin suspend --company <id> | admin resume --company <id>
  admin maintenance on|off --company <id>
  admin approve-device --code <code> --company <id> [--role <role>]
  admin deny-device --code <code>
  admin reset                                               removes all state, then bootstraps again
  admin snapshot export [--company <id>] [--objects] > state.json
                                                            every table's rows (or one company's) as one JSON file;
                                                            --objects: with the buckets' objects (else they come back empty),
                                                            streamed: memory does not grow with their size
  admin snapshot import [--replace] < state.json            loads one into an empty server (--replace: over its state);
                                                            needs the exporting server's SLIPWAY_SECRET_KEY
  admin sim-show                                            simulation progression and fault rules
  admin sim-progression --operation <op> --mode immediate|duration|reads [--ms <n>] [--reads <n>]
  admin sim-fault-add --operation <op> [--target <id>] [--phase <p>] [--probability <0..1>]
                      [--remaining <n>] [--message <text>]
  admin sim-fault-remove --id <rule id>

Simulation at start-up: SLIPWAY_SIM_PROGRESSION (or --sim-progression), e.g.
"deployment=duration:3000,restore=reads:3,*=immediate"; SLIPWAY_SIM_FAULTS, a JSON array of
fault rules such as [{"operation":"deployment","phase":"build","remaining":1}].
`;

const BOOLEAN_FLAGS = new Set(['production', 'trust-proxy', 'help', 'replace', 'objects']);

export function parseArgs(argv: string[]): { positional: string[]; flags: Flags } {
  const positional: string[] = [];
  const flags: Flags = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-h') flags.help = true;
    else if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      if (eq > 0) flags[name] = a.slice(eq + 1);
      else if (BOOLEAN_FLAGS.has(name)) flags[name] = true;
      else {
        const v = argv[i + 1];
        if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`);
        flags[name] = v;
        i++;
      }
    } else positional.push(a);
  }
  return { positional, flags };
}

/**
 * The server's old generation grows by at most half of what the last full collection kept, not by
 * V8's default of up to four times when collections are quick: the heap, and the RSS, stay close
 * to what is live, for full collections that come more often and stay short. A
 * `--heap-growing-percent` given to node itself wins.
 */
function boundHeapGrowth() {
  if (!process.execArgv.some((a) => a.startsWith('--heap-growing-percent') || a.startsWith('--heap_growing_percent'))) {
    setFlagsFromString('--heap-growing-percent=50');
  }
}

async function serve(flags: Flags) {
  boundHeapGrowth();
  const config = loadConfig(flags);
  const server = await createServer(config);
  const base = await server.listen();
  const lines = [
    '',
    `  Slipway is serving the Hosting Platform API v3 at ${base}/v3`,
    `  OpenAPI document: ${base}/v3/openapi.json`,
    `  Dashboard: ${base}/ (sign in with an API key)`,
    `  Storage: ${server.app.database.kind === 'postgres' ? 'PostgreSQL (DATABASE_URL)' : `SQLite in ${config.dataDir}`}`,
    server.tlsCaPath
      ? `  HTTPS with a local CA: trust ${server.tlsCaPath}`
      : config.tls
        ? '  HTTPS with the given certificate'
        : `  Plain HTTP on ${config.host} (local default; use --tls self-signed or --tls-cert/--tls-key for HTTPS)`,
  ];
  for (const m of modules) lines.push(...(m.banner?.(server.app) ?? []));
  if (config.production) lines.push('  Production mode: plain-HTTP requests are refused unless a trusted proxy sets X-Forwarded-Proto: https');
  if (config.operatorToken) lines.push(`  Operator surface: ${base}/_admin (bearer operator token)`);
  if (server.bootstrap.created) {
    lines.push(
      '',
      '  First start: created a company and a Company Admin API key (shown only now):',
      `    company id: ${server.bootstrap.companyId}`,
      `    API key:    ${server.bootstrap.token}`,
    );
  }
  process.stdout.write(lines.join('\n') + '\n\n');
  let closing = false;
  const stop = async () => {
    if (closing) return;
    closing = true;
    await server.close();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

async function admin(positional: string[], flags: Flags) {
  const config = loadConfig(flags);
  const database = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, groupCommit: config.sqliteGroupCommit });
  await migrate(database.db, moduleMigrations());
  const app = createAppContext(config, database, pino({ level: 'silent' }), config.publicUrl ?? `http://${config.host}:${config.port}`);
  for (const m of modules) m.setup?.(app);
  await app.simulation.start();
  const db = database.db;
  const need = (k: string) => {
    const v = flags[k];
    if (typeof v !== 'string') throw new Error(`--${k} is required`);
    return v;
  };
  const out = (v: unknown) => process.stdout.write(JSON.stringify(v, null, 2) + '\n');
  const tx = <T>(fn: (t: typeof db) => Promise<T>) => db.transaction().execute((t) => fn(t as unknown as typeof db));
  try {
    switch (positional[1]) {
      case 'list-companies':
        out(await db.selectFrom('companies').selectAll().orderBy('created_at').execute());
        break;
      case 'create-company':
        out(await tx((t) => accounts.createCompanyWithKey(app, t, need('name'), flags.role as string | undefined)));
        break;
      case 'create-user':
        out(await tx((t) => accounts.createUser(t, need('company'), { email: need('email'), full_name: flags['full-name'] as string | undefined })));
        break;
      case 'create-key': {
        const key = await tx((t) =>
          accounts.createKeyWithRole(app, t, need('company'), { name: (flags.name as string) ?? 'operator key', role: need('role') }),
        );
        out({ id: key.id, name: key.name, token: key.token });
        break;
      }
      case 'suspend':
        out(await tx((t) => accounts.setCompanyStatus(app, t, need('company'), 'suspended')));
        break;
      case 'resume':
        out(await tx((t) => accounts.setCompanyStatus(app, t, need('company'), 'active')));
        break;
      case 'maintenance': {
        const on = positional[2];
        if (on !== 'on' && on !== 'off') throw new Error('usage: slipway admin maintenance on|off --company <id>');
        out(await tx((t) => accounts.setCompanyStatus(app, t, need('company'), on === 'on' ? 'maintenance' : 'active')));
        break;
      }
      case 'approve-device':
        out(await tx((t) => devices.decide(app, t, need('code'), { approve: true, companyId: need('company'), role: flags.role as string | undefined })));
        break;
      case 'deny-device':
        out(await tx((t) => devices.decide(app, t, need('code'), { approve: false })));
        break;
      case 'sim-show':
        out({ progression: await app.simulation.listProgression(), faults: await app.simulation.listFaults() });
        break;
      case 'sim-progression': {
        const mode = need('mode');
        const p = validateProgression({
          mode,
          ms: flags.ms === undefined ? undefined : Number(flags.ms),
          reads: flags.reads === undefined ? undefined : Number(flags.reads),
        });
        await app.simulation.setProgression(need('operation'), p);
        out({ operation: flags.operation, progression: p });
        break;
      }
      case 'sim-fault-add':
        out(
          await app.simulation.addFault({
            operation: need('operation'),
            target_id: (flags.target as string) ?? null,
            phase: (flags.phase as string) ?? null,
            probability: flags.probability === undefined ? 1 : Number(flags.probability),
            remaining: flags.remaining === undefined ? null : Number(flags.remaining),
            message: flags.message as string | undefined,
          }),
        );
        break;
      case 'sim-fault-remove':
        await app.simulation.removeFault(need('id'));
        out({ removed: flags.id });
        break;
      case 'reset':
        out(await accounts.resetAll(app, resetTables()));
        break;
      case 'snapshot': {
        const what = positional[2];
        const external = snapshotObjects(app);
        // Both stream: the document is written as it is read, and read as it arrives.
        if (what === 'export')
          await pipeline(
            await exportSnapshot(app, { company: (flags.company as string | undefined) ?? null, external, objects: flags.objects === true }),
            process.stdout,
          );
        else if (what === 'import') out(await importSnapshot(app, process.stdin, { replace: flags.replace === true, external }));
        else throw new Error('usage: slipway admin snapshot export [--company <id>] [--objects] | slipway admin snapshot import [--replace]');
        break;
      }
      default:
        throw new Error(`unknown admin command "${positional[1] ?? ''}"; see slipway --help`);
    }
  } finally {
    app.simulation.stop();
    await database.close();
  }
}

export async function main(argv: string[]) {
  const { positional, flags } = parseArgs(argv);
  if (flags.help || positional.length === 0) {
    process.stdout.write(HELP);
    return;
  }
  if (positional[0] === 'serve') return serve(flags);
  if (positional[0] === 'admin') return admin(positional, flags);
  throw new Error(`unknown command "${positional[0]}"; see slipway --help`);
}

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`slipway: ${e instanceof ApiError ? `${e.status} ${e.message}` : (e as Error).message}\n`);
  process.exit(e instanceof ApiError ? 1 : 2);
});
