// Builds dist/cli.js: src/ bundled into one ES module with esbuild, so a start loads one file
// instead of hundreds (cold start). Packages that some configurations load on first use
// (src/shared/lazy.ts) and native or optional ones stay outside the bundle and load from
// node_modules. Type checking is `tsc --noEmit`, run before this by `npm run build`.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(`${root}/dist`, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ['src/cli.ts'],
  outfile: 'dist/cli.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  // Native addons and optional peers of bundled packages.
  external: ['better-sqlite3', 'bufferutil', 'utf-8-validate', 'pg-native'],
  // Bundled CommonJS code calls require(); an ES module has none of its own.
  banner: { js: "import { createRequire as __slipwayRequire } from 'node:module'; const require = __slipwayRequire(import.meta.url);" },
  logLevel: 'warning',
});
