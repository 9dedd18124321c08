import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { type Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';

/**
 * Malformed-request generation for the bad-input campaign (test/chaos/bad-input.test.ts): cases
 * come from the OpenAPI document (bodies from each route's JSON Schema), so a new route is covered
 * without editing the campaign; plus raw HTTP (paths are sent unnormalised), table snapshots.
 */

export interface Case {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer | string;
  /** What is wrong, for the report. */
  kind: string;
  /** The request is certainly invalid: any 2xx is a defect. */
  mustReject: boolean;
}

type Schema = Record<string, any>;

/** A minimal valid value of a JSON Schema (the shapes fastify-type-provider-zod emits). */
export function sampleOf(s: Schema | undefined): unknown {
  if (!s || Object.keys(s).length === 0) return 'x';
  if (s.anyOf) return sampleOf(s.anyOf[0]);
  if (s.oneOf) return sampleOf(s.oneOf[0]);
  if (s.enum) return s.enum[0];
  if (s.const !== undefined) return s.const;
  switch (s.type) {
    case 'string':
      return 'x'.repeat(Math.max(1, s.minLength ?? 1));
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: s.minItems ?? 0 }, () => sampleOf(s.items));
    case 'object': {
      const o: Record<string, unknown> = {};
      for (const k of s.required ?? []) o[k] = sampleOf(s.properties?.[k]);
      return o;
    }
  }
  return 'x';
}

const typeOf = (s: Schema | undefined): string | undefined => s?.type ?? (s?.anyOf ? typeOf(s.anyOf[0]) : undefined);

/** Values of every JSON type but `type` (null only where the schema does not allow it). */
function wrongValues(s: Schema): unknown[] {
  const t = typeOf(s);
  if (!t) return [];
  // Keyed by the JSON type each value really has (1.5 is a number, so wrong only for integer).
  const all: [string, unknown][] = [
    ['string', 'str'],
    ['number', 1.5],
    ['boolean', true],
    ['object', { a: 1 }],
    ['array', [1, 2]],
    ['null', null],
  ];
  return all.filter(([k]) => k !== t && !(k === 'null' && s.nullable)).map(([, v]) => v);
}

export const STRINGS: [string, string][] = [
  ['empty string', ''],
  ['huge string', 'A'.repeat(200_000)],
  ['NUL byte', 'a\u0000b'],
  ['unicode', 'Ω😀\u202e\ufeff\ud800'.replace('\ud800', '\u00e9')],
  ['lone surrogate', 'x\ud800y'],
  ['control chars', '\u0001\u0007\u001b[31m\r\n'],
  ['sql', "'; drop table sessions; --"],
  ['path', '../../../etc/passwd'],
];

/** Body cases for one operation's JSON schema; `valid` is a well-formed body. */
export function bodyCases(schema: Schema | undefined): { kind: string; body: string; contentType: string; mustReject: boolean }[] {
  const json = 'application/json';
  const valid = (schema ? sampleOf(schema) : {}) as Record<string, unknown>;
  const out: { kind: string; body: string; contentType: string; mustReject: boolean }[] = [];
  const add = (kind: string, body: unknown, mustReject: boolean, contentType = json) =>
    out.push({ kind, body: typeof body === 'string' && contentType !== json ? body : JSON.stringify(body), contentType, mustReject });
  const props: Record<string, Schema> = schema?.properties ?? {};
  for (const [k, p] of Object.entries(props)) {
    for (const w of wrongValues(p)) add(`wrong type ${k}=${JSON.stringify(w)}`, { ...valid, [k]: w }, true);
    if (typeOf(p) === 'string') for (const [name, v] of STRINGS) add(`${name} in ${k}`, { ...valid, [k]: v }, false);
    if (typeOf(p) === 'object') add(`NUL key in ${k}`, { ...valid, [k]: { 'a\u0000': 'b\u0000', '': '' } }, false);
  }
  for (const k of schema?.required ?? []) {
    const { [k]: _, ...rest } = valid;
    add(`missing ${k}`, rest, true);
  }
  add('unknown field', { ...valid, zz_unknown: 1 }, false);
  const rest = JSON.stringify(valid).slice(1);
  out.push({ kind: '__proto__ field', body: `{"__proto__":{"admin":true}${rest === '}' ? '' : ','}${rest}`, contentType: json, mustReject: false });
  if (schema?.type === 'object' && !schema.nullable) for (const v of [[], 'str', 7, null]) add(`body is ${JSON.stringify(v)}`, v, true);
  for (const raw of ['{', '{"a":', '{"a":1,}', "{'a':1}", '\u0000', 'nul\u0000{}', '[[[[[[[[', '{"a":"\\ud800"}'])
    out.push({ kind: `bad JSON ${JSON.stringify(raw)}`, body: raw, contentType: json, mustReject: raw !== '{"a":"\\ud800"}' });
  out.push({ kind: 'deep nesting', body: '['.repeat(20_000) + ']'.repeat(20_000), contentType: json, mustReject: true });
  for (const ct of ['text/xml', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/json; charset=utf-16', 'application/jsonx'])
    out.push({ kind: `content-type ${ct}`, body: JSON.stringify(valid), contentType: ct, mustReject: false });
  return out;
}

/** Path parameter values: tricks are sent raw (no URL normalisation on the way). */
export const ID_TRICKS: [string, string][] = [
  ['dot-dot', '..'],
  ['encoded dot-dot', '%2e%2e'],
  ['encoded slash', 'a%2fb'],
  ['traversal', '..%2f..%2f..%2fetc%2fpasswd'],
  ['NUL', '%00'],
  ['NUL inside', 'sess_%00x'],
  ['bad percent', '%zz'],
  ['invalid utf-8', '%ff%fe'],
  ['unicode', encodeURIComponent('sess_Ω😀')],
  ['long', 'a'.repeat(3000)],
  ['sql', encodeURIComponent("' or 1=1 --")],
  ['space', '%20'],
  ['negative', '-1'],
  ['json', encodeURIComponent('{"$ne":null}')],
];

export const FILE_TRICKS: [string, string, boolean][] = [
  ['escape', '../../../etc/passwd', true],
  ['encoded escape', '..%2f..%2f..%2fadmin.key', true],
  ['absolute', '%2fetc%2fpasswd', true],
  ['NUL', 'a%00.txt', false],
  ['deep escape', 'a/b/../../../../x', true],
  ['dot', '.', false],
  ['unicode', encodeURIComponent('Ω😀.txt'), false],
  ['long', 'd/'.repeat(2100) + 'x', false],
  ['backslash', '..%5c..%5cx', false],
];

/** One HTTP request on a raw path. `hung` when no full answer came within timeoutMs. */
export function send(base: URL, c: Case, agent: Agent, timeoutMs: number): Promise<{ status: number; body: string; hung: boolean; error?: string }> {
  return new Promise((resolve) => {
    const headers = c.body === undefined ? c.headers : { ...c.headers, 'content-length': String(Buffer.byteLength(c.body)) };
    const req = httpRequest({ host: base.hostname, port: base.port, method: c.method, path: c.path, headers, agent });
    const timer = setTimeout(() => {
      req.destroy();
      resolve({ status: 0, body: '', hung: true });
    }, timeoutMs);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), hung: false });
      });
      res.on('error', () => undefined);
    });
    req.on('error', (e) => {
      clearTimeout(timer);
      // The server closing on an oversized or unparseable request is a clear outcome, not a hang.
      resolve({ status: -1, body: '', hung: false, error: e.message });
    });
    req.end(c.body);
  });
}

/** Tables of the migrations (so a new table is snapshotted without editing the campaign). */
export function migrationTables(root: string): string[] {
  const dir = join(root, 'src', 'platform', 'db', 'migrations');
  const names = new Set<string>();
  for (const f of readdirSync(dir)) for (const m of readFileSync(join(dir, f), 'utf8').matchAll(/create table (?:if not exists )?(\w+)/gi)) names.add(m[1]);
  return [...names];
}

type Exec = (sql: string, params?: unknown[]) => Promise<any[]>;

/** Row hash per primary key, per table, leaving out columns that change by design. */
export async function snapshot(exec: Exec, tables: string[], ignore: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const table of tables) {
    const pk = (
      await exec(
        `select a.attname as c from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey) where i.indrelid = ?::regclass and i.indisprimary`,
        [table],
      )
    ).map((r) => r.c as string);
    for (const { r } of await exec(`select to_jsonb(t) as r from ${table} t`)) {
      for (const col of ignore) delete r[col];
      // The owning session is part of the key, so rows of a session an accepted request touched can be told apart.
      out.set(`${table}:${JSON.stringify(pk.map((k) => r[k]))}${r.session_id ? ` of "${r.session_id}"` : ''}`, createHash('sha256').update(JSON.stringify(r)).digest('hex'));
    }
  }
  return out;
}

/** Keys added, removed or changed between two snapshots. */
export function diff(before: Map<string, string>, after: Map<string, string>): string[] {
  const changed: string[] = [];
  for (const [k, h] of before)
    if (!after.has(k)) changed.push(`removed ${k}`);
    else if (after.get(k) !== h) changed.push(`changed ${k}`);
  for (const k of after.keys()) if (!before.has(k)) changed.push(`added ${k}`);
  return changed;
}
