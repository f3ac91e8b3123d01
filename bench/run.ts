// npm run bench [-- <scenario>...] [--db sqlite|postgres]
//
// Runs the scenarios (bench/scenarios/, all by default) on SQLite and then PostgreSQL (a fresh
// database on DATABASE_URL's server, default the local one), each storage on a server of its own,
// and prints every figure with its ratio to a reference measured in the same run (mostly the bare
// route serving the same page), its target and pass/FAIL. BENCH_SECONDS (5) per measured run,
// BENCH_CONNECTIONS (20), BENCH_READ_ROUNDS (3) paired rounds per read, BENCH_COLDSTARTS (5).
// SLIPWAY_RUN_FROM=dist|src picks the server's code (default: bin/slipway.mjs's choice).
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Bench, runsFrom, type Storage, storageName } from './lib/bench.js';
import { connections, rounds, seconds } from './lib/load.js';
import { printResults, type Result } from './lib/report.js';
import { scenarios } from './scenarios/index.js';

const { values, positionals } = parseArgs({ options: { db: { type: 'string' } }, allowPositionals: true });
const names = scenarios.map((s) => s.name);
const unknown = positionals.filter((p) => !names.includes(p));
if (unknown.length || (values.db !== undefined && values.db !== 'sqlite' && values.db !== 'postgres')) {
  console.error(`usage: npm run bench -- [${names.join(' | ')}]... [--db sqlite|postgres]`);
  process.exit(2);
}
const chosen = scenarios.filter((s) => !positionals.length || positionals.includes(s.name));
const storages: Storage[] = values.db ? [values.db] : ['sqlite', 'postgres'];

// The servers get DATABASE_URL only on PostgreSQL, as the bench database's URL.
const postgresServer = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
delete process.env.DATABASE_URL;

for (const storage of storages) {
  const mine = chosen.filter((s) => !s.only || s.only === storage);
  if (!mine.length) continue;
  console.log(
    `\nSlipway benchmark, ${storageName[storage]}: ${mine.map((s) => s.name).join(', ')}\n` +
      `server from ${runsFrom()}/, ${connections} connections, ${seconds} s per run, ${rounds} paired rounds per read, node ${process.version}, load average ${loadavg()[0]!.toFixed(1)}`,
  );
  const bench = new Bench(storage, postgresServer);
  const results: Result[] = [];
  try {
    for (const scenario of mine) {
      console.log(`\n[${scenario.name}]`);
      try {
        results.push(...(await scenario.run(bench)));
      } catch (e) {
        console.log(`${scenario.name} failed: ${(e as Error).stack ?? e}`);
        results.push({ title: scenario.name, figure: 'error', ratio: '', target: 'runs', ok: false });
      }
    }
  } finally {
    await bench.close();
  }
  printResults(`targets, ${storageName[storage]}:`, results);
}
