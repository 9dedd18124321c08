#!/usr/bin/env node
// After `vite build`: writes a brotli and a gzip copy beside each built file, so the service sends
// them without compressing per request (@fastify/static preCompressed), and prints the size of the
// JavaScript a first load downloads (the budget of issue 32: 250 KB compressed).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const dir = new URL('../dist/web/', import.meta.url).pathname;
const files = [join(dir, 'index.html'), ...readdirSync(join(dir, 'assets')).map((f) => join(dir, 'assets', f))].filter((f) => /\.(js|css|html|svg|json)$/.test(f));
let js = { raw: 0, gz: 0, br: 0 };
for (const f of files) {
  const raw = readFileSync(f);
  const br = brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
  const gz = gzipSync(raw, { level: 9 });
  writeFileSync(f + '.br', br);
  writeFileSync(f + '.gz', gz);
  if (f.endsWith('.js')) js = { raw: js.raw + raw.length, gz: js.gz + gz.length, br: js.br + br.length };
}
console.log(`web console: ${js.raw} B of JavaScript, ${js.gz} B gzip, ${js.br} B brotli`);
