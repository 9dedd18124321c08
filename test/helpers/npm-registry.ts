import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { deadline } from './wait.js';

/**
 * A local npm registry serving one package, `agentsvc-mcp-fixture`: test/fixtures/mcp-tiny.mjs
 * (an MCP server on the SDK) bundled into one file by esbuild, packed by `npm pack`. Enough for
 * `npm install`, `npm cache add` and `npx` (a registry document and a tarball), with no network.
 * `requests` counts what was asked, so a test can tell whether a computer ever reached it.
 */
export const FIXTURE_PACKAGE = 'agentsvc-mcp-fixture';

export async function fixtureRegistry(t: { teardown(fn: () => unknown): void }): Promise<{ url: string; requests: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-npm-fixture-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pkg = join(dir, 'package');
  execFileSync(resolve('node_modules/.bin/esbuild'), [
    resolve('test/fixtures/mcp-tiny.mjs'),
    '--bundle',
    '--platform=node',
    '--format=cjs',
    '--banner:js=#!/usr/bin/env node',
    `--outfile=${join(pkg, 'server.cjs')}`,
    '--log-level=warning',
  ], { timeout: 60_000 });
  const version = '1.0.0';
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: FIXTURE_PACKAGE, version, bin: { [FIXTURE_PACKAGE]: 'server.cjs' } }));
  const file = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: pkg, encoding: 'utf8', timeout: 60_000 }).trim().split('\n').pop()!;
  const tarball = readFileSync(join(dir, file));
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.url === `/${FIXTURE_PACKAGE}`) {
      const manifest = {
        name: FIXTURE_PACKAGE,
        version,
        bin: { [FIXTURE_PACKAGE]: 'server.cjs' },
        dist: {
          tarball: `${base}/${FIXTURE_PACKAGE}/-/${file}`,
          shasum: createHash('sha1').update(tarball).digest('hex'),
          integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
        },
      };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ name: FIXTURE_PACKAGE, 'dist-tags': { latest: version }, versions: { [version]: manifest } }));
    } else if (req.url === `/${FIXTURE_PACKAGE}/-/${file}`) {
      res.setHeader('content-type', 'application/octet-stream');
      res.end(tarball);
    } else {
      res.statusCode = 404;
      res.end('{"error":"not found"}');
    }
  });
  const listening = new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', ok);
  });
  await deadline(listening, 10_000, 'the npm fixture registry to listen');
  t.teardown(() => new Promise((ok) => server.close(ok)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, requests };
}
