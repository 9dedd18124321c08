#!/usr/bin/env node
// After `vite build`: writes a brotli and a gzip copy beside each built file, so the service sends
// them without compressing per request (@fastify/static preCompressed), and prints the size of the
// JavaScript a first load of each page downloads (the scripts its HTML names; the console's budget
// of issue 32 is 250 KB compressed).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const dir = new URL('../dist/web/', import.meta.url).pathname;
const files = [join(dir, 'index.html'), ...readdirSync(join(dir, 'assets')).map((f) => join(dir, 'assets', f))].filter((f) => /\.(js|css|html|svg|json)$/.test(f));
const sizes = new Map();
for (const f of files) {
  const raw = readFileSync(f);
  const br = brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
  const gz = gzipSync(raw, { level: 9 });
  writeFileSync(f + '.br', br);
  writeFileSync(f + '.gz', gz);
  sizes.set(f, { raw: raw.length, gz: gz.length, br: br.length });
}
for (const [page, label] of [['index.html', 'web console'], ['docs.html', 'API docs page']]) {
  const html = readFileSync(join(dir, page), 'utf8');
  const scripts = [...html.matchAll(/"\/(assets\/[^"]+\.js)"/g)].map((m) => sizes.get(join(dir, m[1])));
  const sum = (k) => scripts.reduce((n, s) => n + s[k], 0);
  console.log(`${label}: ${sum('raw')} B of JavaScript, ${sum('gz')} B gzip, ${sum('br')} B brotli`);
}
