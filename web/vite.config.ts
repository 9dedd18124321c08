import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The console is built into dist/web, beside the service's own build, and served by
// src/platform/server/console.ts. Everything it needs is bundled: no CDN, nothing inline (strict CSP).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  // `npx vite -c web/vite.config.ts`: the console with live reload, talking to a running `up`.
  server: {
    proxy: {
      '/api': process.env.AGENTSVC_URL ?? 'http://127.0.0.1:8080',
      '/socket.io': { target: process.env.AGENTSVC_URL ?? 'http://127.0.0.1:8080', ws: true },
    },
  },
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // The preload polyfill would be an inline script; every browser the console targets has modulepreload.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    // Two pages: the console, and the API reference served at /api/docs.
    rollupOptions: { input: { main: fileURLToPath(new URL('index.html', import.meta.url)), docs: fileURLToPath(new URL('docs.html', import.meta.url)) } },
  },
});
