#!/usr/bin/env node
// `npm run build` ends here: writes oclif.manifest.json (every command's id, flags and file) from
// the built commands. Without it oclif imports every command module, the service's included, to
// list them, on every CLI start: 1-6 s before `agentsvc export` moved a byte (bench/terminal.ts).
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Config } from '@oclif/core';

const root = join(import.meta.dirname, '..');
// Config.load reads an existing manifest despite ignoreManifest: a command added since the last
// build would be left out of the new one.
rmSync(join(root, 'oclif.manifest.json'), { force: true });
const config = await Config.load({ root, ignoreManifest: true });
const plugin = config.getPluginsList().find((p) => p.root === config.root);
if (!plugin) throw new Error(`no oclif plugin at ${root}`);
writeFileSync(join(root, 'oclif.manifest.json'), `${JSON.stringify({ ...plugin.manifest, version: config.version })}\n`);
console.log(`oclif.manifest.json: ${Object.keys(plugin.manifest.commands).length} commands`);
