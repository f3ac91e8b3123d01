// Runs every test file under test/ (Node 20's runner does not expand globs or find .ts files).
// Files run one at a time: suites start real servers and databases.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...selected], { stdio: 'inherit' });
process.exit(r.status ?? 1);
