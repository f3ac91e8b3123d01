#!/usr/bin/env node
// Entry point of the `slipway` command. Runs the compiled dist/cli.js (`npm run build`, run by
// `npm ci` / `npm install` through `prepare`) when it is at least as new as every file and folder
// under src/; otherwise runs src/cli.ts through tsx, so a source edit never runs stale code.
// SLIPWAY_RUN_FROM=dist or =src forces one or the other.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const compiled = join(root, 'dist', 'cli.js');

/** Newest modification time under `dir` (files and folders: a deleted file changes its folder). */
function newest(dir) {
  let t = statSync(dir).mtimeMs;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

function fromDist() {
  const forced = process.env.SLIPWAY_RUN_FROM;
  if (forced === 'dist' || forced === 'src') return forced === 'dist';
  if (forced) throw new Error(`SLIPWAY_RUN_FROM must be dist or src, not ${JSON.stringify(forced)}`);
  if (!existsSync(compiled)) return false;
  const src = join(root, 'src');
  return !existsSync(src) || statSync(compiled).mtimeMs >= newest(src);
}

if (fromDist()) {
  // One bundled file: stack traces point at src/ through its source map.
  process.setSourceMapsEnabled(true);
  await import('../dist/cli.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
