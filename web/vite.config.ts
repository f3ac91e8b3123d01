// The dashboard's build: web/ → web/dist, served by Slipway at / (src/shared/http/dashboard.ts).
// Everything is bundled (no fonts or scripts from other hosts); the dev server proxies the API to
// a running `slipway serve` (SLIPWAY_URL, default http://127.0.0.1:8080).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

const target = process.env.SLIPWAY_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 800 },
  server: { proxy: { '/v3': target, '/_admin': target } },
});
