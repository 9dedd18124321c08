/**
 * An OpenAPI 3.0 or 3.1 document (JSON or YAML) turned into tool definitions (docs/integrations.md):
 * one tool per operation, its path, query and header parameters and its request body as one JSON
 * Schema. The document is read, validated and dereferenced by @apidevtools/swagger-parser; what is
 * written here is only what no library does: OpenAPI's schema dialect to the JSON Schema a model's
 * tool takes, and an operation's arguments to an HTTP request.
 */
import { createHash } from 'node:crypto';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv } from 'ajv';
import { parse as parseYaml } from 'yaml';

type Json = Record<string, unknown>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;

export interface OperationParam {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description?: string;
  /** The parameter's schema as the document gives it, dereferenced (OpenAPI's dialect). */
  schema: unknown;
  /** Given with `content` (a JSON-encoded value), not `schema`. */
  json: boolean;
  /** Query objects: `deepObject` gives `name[key]=value`; else each key is its own parameter. */
  style?: string;
  explode?: boolean;
}

export interface OperationBody {
  kind: 'json' | 'form' | 'text';
  mediaType: string;
  required: boolean;
  schema: unknown;
}

/** One operation as kept between calls: small, its schemas the document's own (shared) objects. */
export interface Operation {
  operationId: string;
  method: string;
  path: string;
  /** Summary and description, for the model and for tool search. */
  description: string;
  tags: string[];
  params: OperationParam[];
  body: OperationBody | null;
}

/** An operation of the document that is not offered, and why (the integration's check lists them). */
export interface LeftOut {
  operationId: string;
  method: string;
  path: string;
  reason: string;
}

export interface ParsedDocument {
  title: string;
  version: string;
  servers: string[];
  /** Operations in the document. */
  total: number;
  /** Operations the `operations`/`tags` filters left aside (not an error). */
  filtered: number;
  operations: Operation[];
  leftOut: LeftOut[];
}

export class OpenApiError extends Error {}

const isObj = (x: unknown): x is Json => !!x && typeof x === 'object' && !Array.isArray(x);

/**
 * JSON or YAML text to an object. YAML: the core schema (plain data, no custom tags); aliases within
 * the library's bound on expansion (a billion-laughs document is refused, not expanded).
 */
export function parseDocumentText(input: string): Json {
  let doc: unknown;
  try {
    doc = JSON.parse(input);
  } catch {
    try {
      doc = parseYaml(input, { schema: 'core', maxAliasCount: 100 });
    } catch (e) {
      throw new OpenApiError(`the OpenAPI document is neither JSON nor YAML (${(e as Error).message.split('\n')[0]})`);
    }
  }
  if (!isObj(doc)) throw new OpenApiError('the OpenAPI document must be an object (JSON or YAML)');
  return doc;
}

export interface Filters {
  operations?: string[];
  tags?: string[];
}

/**
 * Validate and dereference a document, then list its operations: each offered (its schema converted
 * and compiled once, as a check) or left out with a reason. `$ref`s outside the document are not
 * followed (a URL would bypass the fetch guard): such a document fails with the library's message.
 */
export async function parseOpenApi(input: string | Json, filters: Filters = {}): Promise<ParsedDocument> {
  const raw = typeof input === 'string' ? parseDocumentText(input) : input;
  if (typeof raw.openapi !== 'string' || !/^3\.[01]\./.test(raw.openapi)) throw new OpenApiError('only OpenAPI 3.0 and 3.1 documents are supported (no "openapi": "3.0.x" or "3.1.x" field)');
  let doc: Json;
  try {
    doc = (await SwaggerParser.validate(raw as never, { resolve: { external: false }, dereference: { circular: true } })) as unknown as Json;
  } catch (e) {
    throw new OpenApiError(`the OpenAPI document is not valid: ${(e as Error).message.split('\n').slice(0, 3).join(' ')}`);
  }
  const v31 = String(doc.openapi).startsWith('3.1');
  const info = isObj(doc.info) ? doc.info : {};
  const servers = Array.isArray(doc.servers) ? doc.servers.filter(isObj).map(serverUrl).filter(Boolean) : [];
  const out: ParsedDocument = { title: typeof info.title === 'string' ? info.title : '', version: String(doc.openapi), servers, total: 0, filtered: 0, operations: [], leftOut: [] };
  const only = filters.operations && new Set(filters.operations);
  const tags = filters.tags && new Set(filters.tags);
  const seen = new Set<string>();
  // A throwaway validator compiler, as strict as the registry's: what compiles here compiles there.
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
  for (const [path, item] of Object.entries(isObj(doc.paths) ? doc.paths : {})) {
    if (!isObj(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isObj(op)) continue;
      out.total++;
      const operationId = typeof op.operationId === 'string' && op.operationId ? op.operationId : `${method}_${path}`;
      seen.add(operationId);
      const opTags = Array.isArray(op.tags) ? op.tags.map(String) : [];
      if ((only && !only.has(operationId)) || (tags && !opTags.some((t) => tags.has(t)))) {
        out.filtered++;
        continue;
      }
      const where = { operationId, method: method.toUpperCase(), path };
      const built = operationOf(where, op, [...(Array.isArray(item.parameters) ? item.parameters : []), ...(Array.isArray(op.parameters) ? op.parameters : [])], opTags);
      if (typeof built === 'string') {
        out.leftOut.push({ ...where, reason: built });
        continue;
      }
      try {
        ajv.compile(operationSchema(built, v31));
        ajv.removeSchema();
      } catch (e) {
        out.leftOut.push({ ...where, reason: `its JSON Schema does not compile: ${(e as Error).message.slice(0, 200)}` });
        continue;
      }
      out.operations.push(built);
    }
  }
  if (only) {
    const missing = [...only].filter((id) => !seen.has(id));
    if (missing.length) throw new OpenApiError(`operations not in the document: ${missing.join(', ')}`);
  }
  return out;
}

/** A server's URL with its variables at their defaults. */
function serverUrl(s: Json): string {
  const vars = isObj(s.variables) ? s.variables : {};
  return String(s.url ?? '').replace(/\{([^}]+)\}/g, (m, name: string) => {
    const v = vars[name];
    return isObj(v) && v.default !== undefined ? String(v.default) : m;
  });
}

/** The operation, or why it cannot be offered. */
function operationOf(where: { operationId: string; method: string; path: string }, op: Json, allParams: unknown[], tags: string[]): Operation | string {
  // Operation-level parameters override path-level ones of the same name and place.
  const byKey = new Map<string, Json>();
  for (const p of allParams) if (isObj(p)) byKey.set(`${p.in}:${p.name}`, p);
  const params: OperationParam[] = [];
  const names = new Set<string>();
  for (const p of byKey.values()) {
    const name = String(p.name ?? '');
    if (p.in === 'cookie') {
      if (p.required === true) return `it needs the cookie parameter ${name}, which integrations do not send`;
      continue;
    }
    if (p.in !== 'path' && p.in !== 'query' && p.in !== 'header') continue;
    if (names.has(name) || name === 'body') return `its parameter name ${JSON.stringify(name)} is used twice (or is "body", the request body's argument)`;
    names.add(name);
    let schema: unknown = p.schema;
    let json = false;
    if (schema === undefined && isObj(p.content)) {
      const first = Object.values(p.content)[0];
      schema = isObj(first) ? first.schema : undefined;
      json = true;
    }
    params.push({
      name,
      in: p.in,
      required: p.in === 'path' || p.required === true,
      description: typeof p.description === 'string' ? p.description : undefined,
      schema: schema ?? { type: 'string' },
      json,
      style: typeof p.style === 'string' ? p.style : undefined,
      explode: typeof p.explode === 'boolean' ? p.explode : undefined,
    });
  }
  let body: OperationBody | null = null;
  const rb = op.requestBody;
  if (isObj(rb) && isObj(rb.content)) {
    const types = Object.keys(rb.content);
    const pick = (re: RegExp) => types.find((t) => re.test(t.split(';')[0].trim().toLowerCase()));
    const json = pick(/^application\/(.+\+)?json$|^\*\/\*$/);
    const form = pick(/^application\/x-www-form-urlencoded$/);
    const text = pick(/^text\//);
    const mediaType = json ?? form ?? text;
    if (mediaType) {
      const media = rb.content[mediaType];
      body = { kind: json ? 'json' : form ? 'form' : 'text', mediaType: mediaType === '*/*' ? 'application/json' : mediaType, required: rb.required === true, schema: isObj(media) && media.schema !== undefined ? media.schema : {} };
    } else if (rb.required === true) return `its request body is only ${types.join(', ') || 'of no media type'}; integrations send JSON, form or text bodies`;
  }
  const text = [op.summary, op.description].filter((x) => typeof x === 'string' && x.trim()).join(' - ');
  return { ...where, description: `${text || where.operationId} (${where.method} ${where.path})`.slice(0, 2000), tags, params, body };
}

/** Where a recursive schema is cut: the model may send any value there; the service's own check is as loose. */
const RECURSIVE = 'A value of the same shape as an enclosing one (a recursive schema, not expanded a second time).';

/** Keywords whose value is one subschema, a map of them or a list of them. */
const ONE = new Set(['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems', 'contentSchema']);
const MAP = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
const LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
/** OpenAPI's keywords (and annotations) a tool schema has no use for: examples only cost bytes. */
const DROP = new Set(['nullable', 'example', 'examples', 'xml', 'discriminator', 'externalDocs', 'readOnly', 'writeOnly', '$schema', '$id']);

/**
 * One schema of the document (OpenAPI 3.0's dialect or 3.1's JSON Schema) as draft-07-compatible
 * JSON Schema for a request: `nullable` as a `null` type, 3.0's boolean exclusive bounds as
 * numbers, read-only properties left out (they are never sent), `x-` extensions and examples
 * dropped. A schema that contains itself (dereferenced into a cycle) is expanded once per path;
 * its second occurrence accepts any value (RECURSIVE says so to the model).
 */
export function toJsonSchema(node: unknown, v31: boolean, onPath: Set<object> = new Set()): unknown {
  if (typeof node === 'boolean') return node;
  if (!isObj(node)) return {};
  if (onPath.has(node)) return { description: RECURSIVE };
  onPath.add(node);
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (DROP.has(k) || k.startsWith('x-')) continue;
    if (ONE.has(k)) out[k] = Array.isArray(v) ? v.map((x) => toJsonSchema(x, v31, onPath)) : toJsonSchema(v, v31, onPath);
    else if (MAP.has(k) && isObj(v)) {
      const m: Json = {};
      for (const [name, s] of Object.entries(v)) {
        if (k === 'properties' && isObj(s) && s.readOnly === true) continue;
        m[name] = toJsonSchema(s, v31, onPath);
      }
      out[k] = m;
    } else if (LIST.has(k) && Array.isArray(v)) out[k] = v.map((x) => toJsonSchema(x, v31, onPath));
    else out[k] = v;
  }
  onPath.delete(node);
  if (Array.isArray(out.required) && isObj(node.properties)) {
    const props = node.properties;
    out.required = out.required.filter((r) => !(isObj(props[r as string]) && (props[r as string] as Json).readOnly === true));
    if (!(out.required as unknown[]).length) delete out.required;
  }
  if (!v31) {
    for (const [ex, bound] of [
      ['exclusiveMinimum', 'minimum'],
      ['exclusiveMaximum', 'maximum'],
    ] as const) {
      if (out[ex] === true && typeof out[bound] === 'number') {
        out[ex] = out[bound];
        delete out[bound];
      } else if (typeof out[ex] === 'boolean') delete out[ex];
    }
    if (node.nullable === true) {
      if (typeof out.type === 'string') out.type = [out.type, 'null'];
      else if (Array.isArray(out.type) && !out.type.includes('null')) out.type = [...out.type, 'null'];
      if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
      if (out.type === undefined && (out.allOf || out.anyOf || out.oneOf)) return { anyOf: [out, { type: 'null' }] };
    }
  }
  return out;
}

/** The operation's arguments as one JSON Schema: its parameters by name, its request body as `body`. */
export function operationSchema(op: Operation, v31: boolean): Json {
  const properties: Json = {};
  const required: string[] = [];
  for (const p of op.params) {
    const s = toJsonSchema(p.schema, v31) as Json;
    properties[p.name] = p.description && isObj(s) && !s.description ? { ...s, description: p.description } : s;
    if (p.required) required.push(p.name);
  }
  if (op.body) {
    properties.body = toJsonSchema(op.body.schema, v31);
    if (op.body.required) required.push('body');
  }
  return { type: 'object', properties, required, additionalProperties: false };
}

const MAX_NAME = 64;

/**
 * The tool names of an integration's operations, namespaced like MCP's (`api__<integration>__<id>`),
 * characters outside [A-Za-z0-9_-] as `_`. A name longer than 64 characters, or one that two
 * operations would share once so cleaned (`get.pet` beside `get_pet`), or one another integration
 * took, is cut and ends with 8 hex digits of a SHA-256 of the integration and the operation id (and
 * its method and path, should that be taken too): stable across restarts whatever the document's
 * order, distinct for distinct operations, mapped back by the tool itself.
 */
export function integrationToolNames(integration: string, ops: { operationId: string; method: string; path: string }[], taken: ReadonlySet<string> = new Set()): string[] {
  const clean = (id: string) => `api__${integration}__${id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const count = new Map<string, number>();
  for (const op of ops) count.set(clean(op.operationId), (count.get(clean(op.operationId)) ?? 0) + 1);
  const used = new Set(taken);
  return ops.map((op) => {
    const name = clean(op.operationId);
    const exact = name === `api__${integration}__${op.operationId}`;
    let out = name;
    if (name.length > MAX_NAME || (!exact && count.get(name)! > 1) || used.has(name)) {
      const hashed = (key: string) => `${name.slice(0, MAX_NAME - 9)}_${createHash('sha256').update(key).digest('hex').slice(0, 8)}`;
      out = hashed(`${integration}\0${op.operationId}`);
      if (used.has(out)) out = hashed(`${integration}\0${op.operationId}\0${op.method} ${op.path}`);
    }
    used.add(out);
    return out;
  });
}

/** A query parameter's value as name/value pairs (form style; deepObject as `name[key]`). */
function queryPairs(p: OperationParam, v: unknown): [string, string][] {
  const str = (x: unknown) => (typeof x === 'object' && x !== null ? JSON.stringify(x) : String(x));
  if (p.json) return [[p.name, JSON.stringify(v)]];
  if (Array.isArray(v)) return p.explode === false ? [[p.name, v.map(str).join(',')]] : v.map((x) => [p.name, str(x)]);
  if (isObj(v)) {
    if (p.style === 'deepObject') return Object.entries(v).map(([k, x]) => [`${p.name}[${k}]`, str(x)]);
    if (p.explode === false) return [[p.name, Object.entries(v).flat().map(str).join(',')]];
    return Object.entries(v).map(([k, x]) => [k, str(x)]);
  }
  return [[p.name, str(v)]];
}

/** The request for one call: URL (path params filled, query added), headers, body. */
export function buildRequest(base: string, op: Operation, args: Json): { url: string; headers: Record<string, string>; body?: string } {
  let path = op.path;
  const url = new URL(`${base.replace(/\/$/, '')}/`);
  const headers: Record<string, string> = { accept: 'application/json' };
  const query: [string, string][] = [];
  for (const p of op.params) {
    const v = args[p.name];
    if (v === undefined || v === null) continue;
    const s = p.json || (typeof v === 'object' && !Array.isArray(v)) ? JSON.stringify(v) : Array.isArray(v) ? v.join(',') : String(v);
    if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(s));
    else if (p.in === 'query') query.push(...queryPairs(p, v));
    else headers[p.name.toLowerCase()] = s;
  }
  const full = new URL(path.replace(/^\//, ''), url);
  for (const [k, v] of query) full.searchParams.append(k, v);
  if (op.body && args.body !== undefined) {
    headers['content-type'] = op.body.mediaType;
    const b = args.body;
    if (op.body.kind === 'json') return { url: full.href, headers, body: JSON.stringify(b) };
    if (op.body.kind === 'form') {
      const form = new URLSearchParams();
      for (const [k, x] of Object.entries(isObj(b) ? b : {})) for (const one of Array.isArray(x) ? x : [x]) form.append(k, typeof one === 'object' ? JSON.stringify(one) : String(one));
      return { url: full.href, headers, body: form.toString() };
    }
    return { url: full.href, headers, body: typeof b === 'string' ? b : JSON.stringify(b) };
  }
  return { url: full.href, headers };
}
