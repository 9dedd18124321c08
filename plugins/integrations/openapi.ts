/**
 * An OpenAPI 3 document (JSON or YAML) turned into tool definitions: one tool per operation,
 * named by its operationId, its path, query and header parameters and its JSON body as one JSON
 * Schema.
 */
import { parse as parseYaml } from 'yaml';

type Json = Record<string, unknown>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

export interface OperationParam {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
}

export interface Operation {
  /** Tool name: the operationId, made fit for a tool name (1-64 of [A-Za-z0-9_-]). */
  name: string;
  operationId: string;
  method: string;
  path: string;
  description: string;
  params: OperationParam[];
  /** `body` argument: JSON request body. */
  hasBody: boolean;
  schema: Json;
}

export class OpenApiError extends Error {}

const isObj = (x: unknown): x is Json => !!x && typeof x === 'object' && !Array.isArray(x);

/** Inline local `$ref`s (#/components/...), bounded in depth so recursive schemas end. */
function deref(doc: Json, node: unknown, depth = 0): unknown {
  if (depth > 12) return {};
  if (Array.isArray(node)) return node.map((n) => deref(doc, n, depth + 1));
  if (!isObj(node)) return node;
  if (typeof node.$ref === 'string') {
    const ref = node.$ref;
    if (!ref.startsWith('#/')) return {};
    let target: unknown = doc;
    for (const part of ref.slice(2).split('/')) target = isObj(target) ? target[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    if (target === undefined) throw new OpenApiError(`unresolved $ref ${ref}`);
    return deref(doc, target, depth + 1);
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    // OpenAPI-only keywords the JSON Schema validator does not know.
    if (k === 'nullable' || k === 'example' || k === 'xml' || k === 'discriminator' || k === 'externalDocs' || k === 'deprecated') continue;
    out[k] = deref(doc, v, depth + 1);
  }
  if (node.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

export const toolName = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);

/**
 * The tool name of an integration's operation, namespaced like MCP's `mcp__<server>__<tool>`: two
 * integrations with the same operation ids (two Petstores) both offer their tools.
 */
export const integrationToolName = (integration: string, operationId: string) => toolName(`api__${integration}__${operationId}`);

/** Parse an OpenAPI 3 document (JSON text or object). Throws OpenApiError with a one-line reason. */
export function parseOpenApi(input: string | Json, only?: string[]): { title: string; servers: string[]; operations: Operation[] } {
  let doc: unknown = input;
  if (typeof input === 'string') {
    try {
      doc = JSON.parse(input);
    } catch {
      // Most real APIs publish YAML. The core schema: plain data, no custom tags, no aliases
      // (a billion-laughs document is refused, not expanded).
      try {
        doc = parseYaml(input, { schema: 'core', maxAliasCount: 0 });
      } catch (e) {
        throw new OpenApiError(`the OpenAPI document is neither JSON nor YAML (${(e as Error).message.split('\n')[0]})`);
      }
    }
  }
  if (!isObj(doc)) throw new OpenApiError('the OpenAPI document must be an object (JSON or YAML)');
  if (typeof doc.openapi !== 'string' || !doc.openapi.startsWith('3.')) throw new OpenApiError('only OpenAPI 3.x documents are supported (no "openapi": "3.x" field)');
  if (!isObj(doc.paths)) throw new OpenApiError('the OpenAPI document has no paths');
  const info = isObj(doc.info) ? doc.info : {};
  const servers = Array.isArray(doc.servers) ? doc.servers.filter(isObj).map((s) => String(s.url ?? '')).filter(Boolean) : [];
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!isObj(item)) continue;
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    for (const method of METHODS) {
      const op = item[method];
      if (!isObj(op)) continue;
      const operationId = typeof op.operationId === 'string' && op.operationId ? op.operationId : `${method}_${path}`;
      if (only && !only.includes(operationId)) continue;
      const properties: Json = {};
      const required: string[] = [];
      const params: OperationParam[] = [];
      const all = [...shared, ...(Array.isArray(op.parameters) ? op.parameters : [])].map((p) => deref(doc as Json, p)).filter(isObj);
      for (const p of all) {
        const where = p.in;
        if (where !== 'path' && where !== 'query' && where !== 'header') continue;
        const name = String(p.name ?? '');
        if (!name || name === 'body') continue;
        const req = where === 'path' || p.required === true;
        const schema: Json = isObj(p.schema) ? { ...p.schema } : { type: 'string' };
        if (typeof p.description === 'string') schema.description = p.description;
        properties[name] = schema;
        if (req) required.push(name);
        params.push({ name, in: where, required: req });
      }
      let hasBody = false;
      const rb = deref(doc as Json, op.requestBody);
      if (isObj(rb) && isObj(rb.content)) {
        const json = Object.entries(rb.content).find(([type]) => /json/.test(type));
        if (json && isObj(json[1])) {
          hasBody = true;
          properties.body = isObj(json[1].schema) ? json[1].schema : { type: 'object' };
          if (rb.required === true) required.push('body');
        }
      }
      const text = [op.summary, op.description].filter((x) => typeof x === 'string' && x).join(' - ');
      ops.push({
        name: toolName(operationId),
        operationId,
        method: method.toUpperCase(),
        path,
        description: `${text || operationId} (${method.toUpperCase()} ${path})`.slice(0, 2000),
        params,
        hasBody,
        schema: { type: 'object', properties, required, additionalProperties: false },
      });
    }
  }
  if (only) {
    const missing = only.filter((id) => !ops.some((o) => o.operationId === id));
    if (missing.length) throw new OpenApiError(`operations not in the document: ${missing.join(', ')}`);
  }
  return { title: typeof info.title === 'string' ? info.title : '', servers, operations: ops };
}

/** The request for one call: URL (path params filled, query added), headers, body. */
export function buildRequest(base: string, op: Operation, args: Json): { url: string; headers: Record<string, string>; body?: string } {
  let path = op.path;
  const url = new URL(base.replace(/\/$/, '') + '/');
  const headers: Record<string, string> = { accept: 'application/json' };
  const query: [string, string][] = [];
  for (const p of op.params) {
    const v = args[p.name];
    if (v === undefined || v === null) continue;
    const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
    if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(s));
    else if (p.in === 'query') {
      if (Array.isArray(v)) for (const x of v) query.push([p.name, String(x)]);
      else query.push([p.name, s]);
    } else headers[p.name.toLowerCase()] = s;
  }
  const full = new URL(path.replace(/^\//, ''), url);
  for (const [k, v] of query) full.searchParams.append(k, v);
  if (op.hasBody && args.body !== undefined) {
    headers['content-type'] = 'application/json';
    return { url: full.href, headers, body: JSON.stringify(args.body) };
  }
  return { url: full.href, headers };
}
