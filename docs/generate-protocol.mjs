#!/usr/bin/env node
// `npm run docs:protocol`: rewrite the generated part of docs/socket-protocol.md (the server events
// and patch types) from the event catalogue, src/chat/catalogue.ts.
import { readFileSync, writeFileSync } from 'node:fs';
import { tsImport } from 'tsx/esm/api';

const { protocolTables } = await tsImport('../src/chat/catalogue.ts', import.meta.url);
const file = new URL('./socket-protocol.md', import.meta.url);
const START = '<!-- generated from src/chat/catalogue.ts by `npm run docs:protocol`: do not edit below -->';
const END = '<!-- end of generated part -->';
const doc = readFileSync(file, 'utf8');
const a = doc.indexOf(START);
const b = doc.indexOf(END);
if (a < 0 || b < a) throw new Error('docs/socket-protocol.md: the generated-part markers are missing');
writeFileSync(file, `${doc.slice(0, a + START.length)}\n${protocolTables()}\n${doc.slice(b)}`);
console.log('docs/socket-protocol.md: server events regenerated');
