#!/usr/bin/env node
// Profile a CSV/TSV file: rows, and per column type, missing values, numeric stats, top values.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const json = args.includes('--json');
if (json) args.splice(args.indexOf('--json'), 1);
let delimiter = opt('--delimiter', null);
const top = Number(opt('--top', 3));
const file = args[0];
if (!file) {
  console.error('usage: profile.mjs FILE [--delimiter D] [--top N] [--json]');
  process.exit(2);
}
const text = readFileSync(file, 'utf8').replace(/^\uFEFF/, '');
if (!delimiter) {
  const first = text.slice(0, text.indexOf('\n') >>> 0 || text.length);
  delimiter = [',', ';', '\t', '|'].map((d) => [d, first.split(d).length]).sort((a, b) => b[1] - a[1])[0][0];
}
if (delimiter === '\\t' || delimiter === 'tab') delimiter = '\t';

/** RFC 4180 records: quotes, doubled quotes, delimiters and newlines inside quotes. */
function* records(s, d) {
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quoted) {
      if (c === '"' && s[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === d) {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && s[i + 1] === '\n') i++;
      row.push(field);
      yield row;
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length) {
    row.push(field);
    yield row;
  }
}

const it = records(text, delimiter);
const header = it.next().value ?? [];
const cols = header.map((name) => ({ name: name.trim(), missing: 0, numbers: [], dates: 0, texts: 0, counts: new Map() }));
let rows = 0;
let ragged = 0;
for (const r of it) {
  if (r.length === 1 && r[0] === '') continue;
  rows++;
  if (r.length !== cols.length) ragged++;
  cols.forEach((c, i) => {
    const v = (r[i] ?? '').trim();
    if (v === '' || /^(na|n\/a|null|none|-)$/i.test(v)) return void c.missing++;
    c.counts.set(v, (c.counts.get(v) ?? 0) + 1);
    const num = Number(delimiter === ',' ? v : v.replace(/,(?=\d{3}\b)/g, ''));
    if (Number.isFinite(num)) c.numbers.push(num);
    else if (/^\d{4}-\d{2}-\d{2}/.test(v) && !Number.isNaN(Date.parse(v))) c.dates++;
    else c.texts++;
  });
}
const profile = {
  file,
  delimiter: delimiter === '\t' ? 'tab' : delimiter,
  rows,
  columns: cols.map((c) => {
    const present = rows - c.missing;
    const type = present === 0 ? 'empty' : c.numbers.length === present ? 'number' : c.dates === present ? 'date' : 'text';
    const out = { name: c.name, type, missing: c.missing, distinct: c.counts.size };
    if (type === 'number') {
      const sum = c.numbers.reduce((a, b) => a + b, 0);
      Object.assign(out, { min: Math.min(...c.numbers), max: Math.max(...c.numbers), mean: +(sum / c.numbers.length).toFixed(4), sum: +sum.toFixed(4) });
    }
    out.top = [...c.counts].sort((a, b) => b[1] - a[1]).slice(0, top).map(([value, count]) => ({ value, count }));
    return out;
  }),
  ragged_rows: ragged,
};
if (json) console.log(JSON.stringify(profile, null, 2));
else {
  console.log(`${file}: ${rows} rows, ${cols.length} columns (delimiter ${profile.delimiter})${ragged ? `, ${ragged} rows with a different column count` : ''}`);
  for (const c of profile.columns) {
    const parts = [`${c.type}, ${c.missing} missing, ${c.distinct} distinct`];
    if (c.type === 'number') parts.push(`min ${c.min} max ${c.max} mean ${c.mean} sum ${c.sum}`);
    if (c.top.length) parts.push(`top: ${c.top.map((t) => `${t.value} (${t.count})`).join(', ')}`);
    console.log(`- ${c.name}: ${parts.join('; ')}`);
  }
}
