/**
 * The OpenAPI document outside clients are generated from. Routes declare their schemas where they
 * are registered; this file turns fastify's view of them into what SPEC names and generators can
 * trust: wildcard paths get SPEC's parameter names (a generated client wrote a file literally named
 * `{*}`), rename/copy are their own operations, public routes need no key, and every operation has
 * an operationId, a summary and the CONTRACT 3 error body. Checked by test/server/openapi.test.ts
 * with Redocly's recommended rules.
 */
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

type Json = Record<string, unknown>;
type Operation = Json & { parameters?: Json[]; responses?: Json; requestBody?: unknown; summary?: string; operationId?: string; security?: unknown[] };
type PathItem = Record<string, Operation>;

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

/** SPEC's name for the wildcard of each wildcard route: folders for listings, uploads and zips. */
function wildcardName(path: string): string {
  return /\/(ls|upload|download-dir)\/\{\*\}$/.test(path) ? 'dir_path' : 'file_path';
}

const ERROR_BODY = {
  type: 'object',
  description: 'CONTRACT 3: every error has a stable code and a detail for people (a list of field errors for 422).',
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

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

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
      // POST .../files/{file_path} is rename or copy, read off the path's end (SPEC's two routes).
      if (method === 'post' && /\/files\/\{file_path\}$/.test(path) && raw.startsWith('/api/sessions/')) {
        put(`${path}/rename`, 'post', { ...op, summary: 'Rename a file or folder (bare new_name, same folder)' });
        const { requestBody: _none, ...copy } = op;
        put(`${path}/copy`, 'post', { ...copy, summary: 'Copy a file or folder beside it (`<stem> copy<ext>`)' });
        continue;
      }
      put(path, method, op);
    }
  }
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      op.operationId ??= operationIdOf(method, path);
      op.summary ??= summaryOf(method, path);
      op.responses = { ...op.responses, '4XX': errorResponse('Client error (CONTRACT 3): 401 no or bad key, 403, 404 (also another user\'s), 409, 413, 422, 429'), '5XX': errorResponse('Server error: 507 INSUFFICIENT_STORAGE when the disk is full') };
    }
  }
  const components = (doc.components ?? {}) as Json;
  return { ...doc, paths, components: { ...components, schemas: { ...((components.schemas as Json) ?? {}), Error: ERROR_BODY } } };
}

/** Options of @fastify/swagger: zod schemas converted, public routes without the key requirement. */
export function openapiOptions(): FastifyDynamicSwaggerOptions {
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
      // The public routes (CONTRACT 2) are decided on the matched route's config: so is the document.
      if ((input.route.config as { public?: boolean } | undefined)?.public) out.schema = { ...out.schema, security: [] } as typeof out.schema;
      return out;
    },
    transformObject: (o) => tidyDocument(('openapiObject' in o ? o.openapiObject : o.swaggerObject) as Json),
  };
}
