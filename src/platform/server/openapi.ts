/**
 * The OpenAPI document outside clients are generated from. Routes declare their schemas where they
 * are registered; this file turns fastify's view of them into what the interface names and
 * generators can trust: wildcard paths get their documented parameter names (a generated client wrote a file literally named
 * `{*}`), rename/copy are their own operations, public routes need no key, and every operation has
 * an operationId, a summary and the error body of docs/errors.md. Checked by test/server/openapi.test.ts
 * with Redocly's recommended rules.
 */
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

type Json = Record<string, unknown>;
type Operation = Json & { parameters?: Json[]; responses?: Json; requestBody?: unknown; summary?: string; operationId?: string; security?: unknown[] };
type PathItem = Record<string, Operation>;

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

/** The documented name for the wildcard of each wildcard route: folders for listings, uploads and zips. */
function wildcardName(path: string): string {
  return /\/(ls|upload|download-dir)\/\{\*\}$/.test(path) ? 'dir_path' : 'file_path';
}

const ERROR_BODY = {
  type: 'object',
  description: 'Every error has a stable code and a detail for people (a list of field errors for 422).',
  required: ['detail', 'code'],
  properties: {
    detail: {
      oneOf: [
        { type: 'string' },
        {
          type: 'array',
          items: { type: 'object', properties: { loc: { type: 'array', items: { oneOf: [{ type: 'string' }, { type: 'integer' }] } }, msg: { type: 'string' }, type: { type: 'string' } } },
        },
      ],
    },
    code: { type: 'string', example: 'NOT_FOUND' },
  },
};

const ERROR_RESPONSE = {
  description: 'An error (docs/errors.md): 400 unreadable body, 401 no or bad key, 403 not allowed, 404 unknown (also another user\'s), 409 busy or conflicting, 413 too large, 422 invalid field, 429 rate limited, 500 unexpected, 503 not ready, 507 disk full',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
};
/**
 * Every status an operation may answer with an error body, each written out: generators such as
 * orval turn a range key (`4XX`) into an identifier that does not compile. One shared response.
 */
const ERROR_STATUSES = ['400', '401', '403', '404', '409', '413', '422', '429', '500', '503', '507'];

const BINARY = { schema: { type: 'string', format: 'binary' } };
/**
 * Answers that are not described by a route's JSON schema, by operation: a file is bytes of its own
 * type, a folder or an export a ZIP, the checks an event stream. Without a media type, orval threw
 * on the ZIP and swagger-typescript-api read `data: null`.
 */
const ANSWERS: Record<string, Json> = {
  'get /api/sessions/{session_id}/files/{file_path}': { 'application/octet-stream': BINARY },
  'get /api/solutions/{solution_id}/files/{file_path}': { 'application/octet-stream': BINARY },
  'get /api/sessions/{session_id}/download-dir/{dir_path}': { 'application/zip': BINARY },
  'get /api/sessions/{session_id}/download-dir': { 'application/zip': BINARY },
  'get /api/sessions/{session_id}/export': { 'application/zip': BINARY },
  'get /api/env/check': { 'text/event-stream': { schema: { type: 'string', description: 'events `check` (one per check), then `end`' } } },
  'get /api/frontend_config/{file_path}': { 'application/json': { schema: { description: 'the stored JSON document' } } },
  'put /api/frontend_config/{file_path}': { 'application/json': { schema: { description: 'the stored JSON document' } } },
  'post /api/sessions/import': { 'application/json': { schema: { type: 'object', description: 'the new session (as GET /api/sessions/{session_id}) and its session_id', additionalProperties: true } } },
  'post /api/sessions/preview-import': { 'application/json': { schema: { type: 'object', description: 'what the archive holds: format, version, intent, turns, files, total_bytes, warnings', additionalProperties: true } } },
};
/** The archive upload of the import routes (multipart, one file field and an optional name). */
const ARCHIVE_UPLOAD = {
  required: true,
  content: { 'multipart/form-data': { schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' }, name: { type: 'string' } } } } },
};

/** A schema that only allows null (zod's `z.null()`: `{type: 'string', nullable: true, enum: [null]}`). */
function nullOnly(s: unknown): boolean {
  const o = s as Json | null;
  return !!o && typeof o === 'object' && Array.isArray(o.enum) && o.enum.length === 1 && o.enum[0] === null;
}

/** What a null-only schema becomes: a type every generator can write, which admits null. */
const NULL_ONLY = { type: 'object', nullable: true, description: 'null' };

/**
 * Null-only schemas out of the document, which generators turn into a type that does not compile
 * (orval wrote `null` where a type belongs). In an `anyOf`/`oneOf` whose other members all carry a
 * `type`, the null member goes and each of them becomes `nullable` (OpenAPI 3.0 wants `nullable`
 * beside a `type`); elsewhere it becomes a nullable object. In place, over the whole tree.
 */
function withoutNullOnly(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const n of node) withoutNullOnly(n);
    return;
  }
  const o = node as Json;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const members = o[key];
    if (!Array.isArray(members) || !members.some(nullOnly)) continue;
    const rest = members.filter((m) => !nullOnly(m)) as Json[];
    if (rest.length && rest.every((m) => typeof m.type === 'string')) o[key] = rest.map((m) => ({ ...m, nullable: true }));
  }
  for (const [k, v] of Object.entries(o)) {
    if (nullOnly(v)) o[k] = { ...NULL_ONLY };
    else withoutNullOnly(v);
  }
}

const VERB: Record<string, string> = { get: 'Get', put: 'Replace', post: 'Create', patch: 'Update', delete: 'Delete' };

/** A short summary from the method and the path's words, for routes that declare none. */
function summaryOf(method: string, path: string): string {
  const parts = path.split('/').filter((p) => p && p !== 'api');
  const words = parts.filter((p) => !p.startsWith('{'));
  const last = parts[parts.length - 1] ?? '';
  const onItem = last.startsWith('{');
  let verb = VERB[method];
  if (method === 'get' && !onItem) verb = 'List';
  if (method === 'post' && !onItem && parts.length > 1 && parts[parts.length - 2].startsWith('{')) verb = 'Run';
  return `${verb} ${words.join(' › ') || 'root'}`;
}

/** A stable, unique operationId: method and path words, parameters as `by_<name>`. */
function operationIdOf(method: string, path: string): string {
  const parts = path
    .split('/')
    .filter((p) => p && p !== 'api')
    .map((p) => (p.startsWith('{') ? `by_${p.slice(1, -1)}` : p))
    .map((p) => p.replace(/[^A-Za-z0-9]+/g, '_'));
  return [method, ...parts].join('_');
}

function renameParam(op: Operation, from: string, to: string): Operation {
  return { ...op, parameters: op.parameters?.map((p) => (p.in === 'path' && p.name === from ? { ...p, name: to } : p)) };
}

/** The whole document, tidied (fastify-swagger's transformObject). */
export function tidyDocument(doc: Json & { paths?: Record<string, PathItem> }): Json {
  const paths: Record<string, PathItem> = {};
  const put = (path: string, method: string, op: Operation) => {
    paths[path] ??= {};
    paths[path][method] = op;
  };
  for (const [raw, item] of Object.entries(doc.paths ?? {})) {
    let path = raw;
    let name: string | null = null;
    if (raw.endsWith('{*}')) {
      name = wildcardName(raw);
      path = raw.replace('{*}', `{${name}}`);
    }
    // GET takes a provider_key (`<runtime>:<record_id>`), the others a record id: one path, as
    // OpenAPI allows one parameter name per position.
    const merged = raw === '/api/prod_agents/{provider_key}';
    if (merged) path = '/api/prod_agents/{record_id}';
    for (const [method, value] of Object.entries(item)) {
      if (!METHODS.includes(method as (typeof METHODS)[number])) {
        put(path, method, value);
        continue;
      }
      let op = name ? renameParam(value, '*', name) : value;
      if (merged) {
        op = renameParam(op, 'provider_key', 'record_id');
        op.description ??= 'Takes a provider_key (`<runtime_provider>:<record_id>`) as well as a record id.';
      }
      // POST .../files/{file_path} is rename or copy, read off the path's end (two operations in the document).
      if (method === 'post' && /\/files\/\{file_path\}$/.test(path) && raw.startsWith('/api/sessions/')) {
        put(`${path}/rename`, 'post', { ...op, summary: 'Rename a file or folder (bare new_name, same folder)' });
        const { requestBody: _none, ...copy } = op;
        put(`${path}/copy`, 'post', { ...copy, summary: 'Copy a file or folder beside it (`<stem> copy<ext>`)' });
        continue;
      }
      put(path, method, op);
      // Folder routes also serve the root without a folder (`.../ls`): documented as their own
      // operations, since a path parameter cannot be empty.
      const root = /^(\/api\/sessions\/\{session_id\}\/(ls|download-dir|upload))\/\{dir_path\}$/.exec(path);
      if (root) put(root[1], method, { ...op, operationId: undefined, summary: `${op.summary ?? summaryOf(method, root[1])} (the session folder's root)`, parameters: op.parameters?.filter((p) => p.name !== 'dir_path') });
    }
  }
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      op.operationId ??= operationIdOf(method, path);
      op.summary ??= summaryOf(method, path);
      const isPublic = Array.isArray(op.security) && op.security.length === 0;
      const errors = Object.fromEntries(ERROR_STATUSES.filter((c) => !(isPublic && c === '401')).map((c) => [c, { $ref: '#/components/responses/Error' }]));
      op.responses = { ...op.responses, ...errors };
      tidyAnswers(`${method} ${path}`, op);
      // A path parameter is always given: a default ('' for the wildcards) tells generators it may not be.
      for (const p of op.parameters ?? []) if (p.in === 'path' && p.schema && typeof p.schema === 'object') delete (p.schema as Json).default;
    }
  }
  withoutNullOnly(paths);
  const components = (doc.components ?? {}) as Json;
  withoutNullOnly(components.schemas);
  return {
    ...doc,
    paths,
    components: { ...components, schemas: { ...((components.schemas as Json) ?? {}), Error: ERROR_BODY }, responses: { ...((components.responses as Json) ?? {}), Error: ERROR_RESPONSE } },
  };
}

/** One operation's bodies as the server takes and answers them (see ANSWERS, ARCHIVE_UPLOAD). */
function tidyAnswers(key: string, op: Operation): void {
  const responses = op.responses as Record<string, Json>;
  const answer = ANSWERS[key];
  if (answer) responses['200'] = { ...responses['200'], description: (responses['200']?.description as string) === 'Default Response' ? 'OK' : responses['200']?.description, content: answer };
  // 204 has no body: a `null` schema there is a type generators cannot write.
  for (const [status, r] of Object.entries(responses)) if (status === '204' && r && typeof r === 'object') delete r.content;
  if (key === 'post /api/sessions/import' || key === 'post /api/sessions/preview-import') op.requestBody = ARCHIVE_UPLOAD;
  const body = op.requestBody as { required?: boolean; content?: Record<string, { schema?: Json }> } | undefined;
  const schema = body?.content?.['application/json']?.schema;
  if (!body || !schema) return;
  // A body the server fills in when absent (share's `{}`) is not required.
  if (schema.default !== undefined) body.required = false;
  // Rename: the server requires new_name (a bare name); the shared action schema had it optional.
  if (key.endsWith('/rename')) {
    body.required = true;
    delete schema.nullable;
    schema.required = ['new_name'];
  }
}

/** Options of @fastify/swagger: zod schemas converted, public routes without the key requirement. */
export function openapiOptions(rolesOf?: (method: string, url: string) => readonly string[] | 'public' | undefined): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      info: {
        title: 'agentsvc',
        version: '0.1.0',
        description: 'Agent session service: REST under /api, chat over Socket.IO at /socket.io/ (docs/socket-protocol.md).',
        license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' },
      },
      servers: [{ url: '/', description: 'this service' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: (input) => {
      const out = jsonSchemaTransform(input);
      // The public routes (docs/trust-boundary.md) are decided on the matched route's config: so is the document.
      if ((input.route.config as { public?: boolean } | undefined)?.public) out.schema = { ...out.schema, security: [] } as typeof out.schema;
      // Who may use it, from the role table (docs/identity.md).
      const method = [input.route.method].flat().find((m) => m !== 'HEAD') ?? 'GET';
      const roles = rolesOf?.(method, input.route.url);
      if (roles) out.schema = { ...out.schema, 'x-roles': roles === 'public' ? ['public'] : [...roles] } as typeof out.schema;
      return out;
    },
    transformObject: (o) => tidyDocument(('openapiObject' in o ? o.openapiObject : o.swaggerObject) as Json),
  };
}
