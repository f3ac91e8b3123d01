// Runs every test file under test/ (Node 20's runner does not expand globs or find .ts files),
// or those whose path (relative to test/) contains one of the arguments.
//
// Files run SLIPWAY_TEST_CONCURRENCY at a time (default 2), each in its own process, and fail
// after SLIPWAY_TEST_TIMEOUT_MS (default 20 minutes). They are independent: every suite starts
// its own servers on port 0, in its own mkdtemp directory or on a fresh PostgreSQL database with
// a random name, and child-process suites do the same; nothing uses a fixed port, a fixed path or
// state shared between processes. SLIPWAY_TEST_CONCURRENCY=1 runs them one at a time.
//
// The output is node's spec reporter; node's TAP reporter is written to a temporary file and its
// closing summary (`# tests N`, `# pass N`, `# fail N`, ...) is printed last, for tools that read
// those lines. The exit status is the runner's: non-zero when any test fails.
//
// The PostgreSQL databases the suites create begin with this run's own prefix
// (SLIPWAY_TEST_DB_PREFIX, see createPgDatabase in helpers/server.ts), then the file that made
// them; any still there when the run ends (a suite killed before its teardown, or one that forgot
// it) are listed and dropped.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const root = fileURLToPath(new URL('.', import.meta.url));
const only = process.argv.slice(2);
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith('.test.ts')) files.push(p);
  }
})(root);
const selected = only.length ? files.filter((f) => only.some((o) => relative(root, f).includes(o))) : files;
if (!selected.length) {
  console.error('no test files matched');
  process.exit(1);
}

const concurrency = Number(process.env.SLIPWAY_TEST_CONCURRENCY ?? 2);
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(`SLIPWAY_TEST_CONCURRENCY must be a positive integer (got ${process.env.SLIPWAY_TEST_CONCURRENCY})`);
  process.exit(1);
}

const timeout = Number(process.env.SLIPWAY_TEST_TIMEOUT_MS ?? 1_200_000);
if (!Number.isInteger(timeout) || timeout < 1) {
  console.error(`SLIPWAY_TEST_TIMEOUT_MS must be a positive integer (got ${process.env.SLIPWAY_TEST_TIMEOUT_MS})`);
  process.exit(1);
}

/** The names of this run's test databases begin with it (see createPgDatabase). */
const dbPrefix = `slipway_test_${randomBytes(3).toString('hex')}_`;
const tapDir = mkdtempSync(join(tmpdir(), 'slipway-test-run-'));
const tapFile = join(tapDir, 'report.tap');
try {
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      `--test-concurrency=${concurrency}`,
      // A test file that hangs (a promise nothing settles) fails after this long instead of
      // holding the run until CI's own limit. The longest files (image builds, the swarm suites,
      // which also wait for each other's hold on the one test swarm) take up to ~10 minutes on a
      // loaded machine, waiting included.
      `--test-timeout=${timeout}`,
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=tap',
      `--test-reporter-destination=${tapFile}`,
      ...selected,
    ],
    { stdio: 'inherit', env: { ...process.env, SLIPWAY_TEST_DB_PREFIX: dbPrefix, SLIPWAY_CHECK_PURE: '1' } },
  );
  await dropLeftovers(dbPrefix);
  let tap = '';
  try {
    tap = readFileSync(tapFile, 'utf8');
  } catch {
    // The runner did not get as far as writing its report; its exit status says why.
  }
  // The closing block of `# name N` lines after the last test.
  const lines = tap.trimEnd().split('\n');
  let start = lines.length;
  while (start > 0 && /^# \w+ [\d.]+$/.test(lines[start - 1])) start--;
  const summary = lines.slice(start);
  if (summary.length) console.log(`\n${summary.join('\n')}`);
  const count = (name) => Number(summary.find((l) => l.startsWith(`# ${name} `))?.split(' ')[2] ?? 0);
  const clean = r.status === 0 && summary.length > 0 && count('fail') === 0 && count('cancelled') === 0;
  process.exitCode = clean ? 0 : r.status || 1;
} finally {
  rmSync(tapDir, { recursive: true, force: true });
}

/** Drops the test databases named with `prefix` that are still there, naming them (nothing when PostgreSQL does not answer). */
async function dropLeftovers(prefix) {
  const admin = new pg.Client({ connectionString: process.env.SLIPWAY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' });
  try {
    await admin.connect();
  } catch {
    return;
  }
  try {
    const { rows } = await admin.query(`SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY datname`, [`${prefix.replaceAll('_', '\\_')}%`]);
    if (!rows.length) return;
    console.log(`\n${rows.length} test database(s) left behind, dropped: ${rows.map((r) => r.datname).join(', ')}`);
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
