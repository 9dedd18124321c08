#!/usr/bin/env node
// `npm run docs:protocol`: rewrite the generated part of docs/socket-protocol.md (the server events
// and patch types, every payload's fields and an example) from the event catalogue,
// src/core/events/catalogue.ts and src/core/events/protocol-shapes.ts.
import { readFileSync, writeFileSync } from 'node:fs';
import { tsImport } from 'tsx/esm/api';

const { protocolTables, clientTable } = await tsImport('../src/core/events/catalogue.ts', import.meta.url);
const { shapesDoc } = await tsImport('../src/core/events/protocol-shapes.ts', import.meta.url);
const file = new URL('./socket-protocol.md', import.meta.url);
const START = '<!-- generated from src/core/events/catalogue.ts by `npm run docs:protocol`: do not edit below -->';
const END = '<!-- end of generated part -->';
let doc = readFileSync(file, 'utf8');
// Each generated part, in document order: the client events, the server events, the shapes.
let from = 0;
for (const table of [clientTable(), protocolTables(), shapesDoc()]) {
  const a = doc.indexOf(START, from);
  const b = doc.indexOf(END, a);
  if (a < 0 || b < a) throw new Error('docs/socket-protocol.md: the generated-part markers are missing');
  doc = `${doc.slice(0, a + START.length)}\n${table}\n${doc.slice(b)}`;
  from = doc.indexOf(END, a) + END.length;
}
writeFileSync(file, doc);
console.log('docs/socket-protocol.md: client events, server events and shapes regenerated');
