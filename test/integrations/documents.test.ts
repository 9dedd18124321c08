import t from 'tap';
import { stringify as stringifyYaml } from 'yaml';
import { buildRequest, integrationToolNames, operationSchema, parseOpenApi } from '../../plugins/integrations/openapi.js';
import { buildWithModel } from '../helpers/chat.js';
import { integrationsLoaded } from './helpers.js';

const responses = { '200': { description: 'ok' } };
const LONG = 'listEveryWidgetOfTheWarehouseThatWasShippedBeforeTheGivenDateAndNotYetReturned';

/** A 3.1 document with what the old conversion mangled or dropped, and what cannot be offered. */
const DOC = {
  openapi: '3.1.0',
  info: { title: 'Shop', version: '1' },
  servers: [{ url: 'https://{region}.shop.example/v1', variables: { region: { default: 'eu' } } }],
  components: {
    schemas: {
      // Recursive: a category holds categories.
      Category: { type: 'object', description: 'A category', properties: { name: { type: 'string', description: 'Its name' }, children: { type: 'array', items: { $ref: '#/components/schemas/Category' } } }, required: ['name'] },
      Item: {
        type: 'object',
        properties: { id: { type: 'integer', readOnly: true }, name: { type: ['string', 'null'], maxLength: 40 }, price: { type: 'number', exclusiveMinimum: 0 }, category: { $ref: '#/components/schemas/Category' } },
        required: ['id', 'name'],
      },
    },
  },
  paths: {
    '/items': {
      post: { operationId: 'createItem', tags: ['items'], summary: 'Create an item', responses, requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } } } },
      get: { operationId: LONG, tags: ['items'], responses, parameters: [{ name: 'filter', in: 'query', style: 'deepObject', schema: { type: 'object', properties: { color: { type: 'string' } } } }] },
    },
    '/items/{id}/photo': {
      put: { operationId: 'uploadPhoto', tags: ['photos'], responses, parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }], requestBody: { required: true, content: { 'multipart/form-data': { schema: { type: 'object' } } } } },
    },
    '/session': { get: { operationId: 'whoami', tags: ['auth'], responses, parameters: [{ name: 'sid', in: 'cookie', required: true, schema: { type: 'string' } }] } },
    '/login': { post: { operationId: 'login', tags: ['auth'], responses, requestBody: { content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', properties: { user: { type: 'string' } } } } } } } },
  },
};

t.test('a 3.1 document: schemas kept intact, recursion cut once with a reason, what cannot be called left out with its reason', async (t) => {
  const doc = await parseOpenApi(stringifyYaml(DOC));
  t.equal(doc.total, 5);
  t.same(doc.servers, ['https://eu.shop.example/v1'], 'server variables at their defaults');
  t.same(
    doc.leftOut.map((o) => `${o.operationId}: ${o.reason}`),
    ['uploadPhoto: its request body is only multipart/form-data; integrations send JSON, form or text bodies', 'whoami: it needs the cookie parameter sid, which integrations do not send'],
  );
  const create = doc.operations.find((o) => o.operationId === 'createItem')!;
  const category = { type: 'object', description: 'A category', properties: { name: { type: 'string', description: 'Its name' }, children: { type: 'array', items: { description: /recursive schema, not expanded a second time/ } } }, required: ['name'] };
  t.match(operationSchema(create, true), {
    type: 'object',
    properties: { body: { type: 'object', properties: { name: { type: ['string', 'null'], maxLength: 40 }, price: { type: 'number', exclusiveMinimum: 0 }, category }, required: ['name'] } },
    required: ['body'],
    additionalProperties: false,
  });
  t.notOk('id' in (operationSchema(create, true).properties as any).body.properties, 'a read-only property is not asked for');
  const names = integrationToolNames('shop', doc.operations);
  t.same(names, ['api__shop__listEveryWidgetOfTheWarehouseThatWasShippedB_6312a274', 'api__shop__createItem', 'api__shop__login'], 'a name past 64 characters: cut, with a hash');
  t.same(integrationToolNames('shop', [...doc.operations].reverse()), [...names].reverse(), 'names do not depend on the order of the document');
  const list = doc.operations.find((o) => o.operationId === LONG)!;
  t.equal(buildRequest('https://eu.shop.example/v1', list, { filter: { color: 'red' } }).url, 'https://eu.shop.example/v1/items?filter%5Bcolor%5D=red', 'deepObject query');
  const login = doc.operations.find((o) => o.operationId === 'login')!;
  t.same(buildRequest('https://x.example', login, { body: { user: 'ann' } }), { url: 'https://x.example/login', headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' }, body: 'user=ann' }, 'a form body');
});

t.test("3.0's dialect: nullable, boolean exclusive bounds; filters by tags and operations", async (t) => {
  const v30 = {
    openapi: '3.0.3',
    info: { title: 'x', version: '1' },
    paths: {
      '/a': { post: { operationId: 'a', tags: ['one'], responses, requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { n: { type: 'integer', minimum: 1, exclusiveMinimum: true, nullable: true }, e: { type: 'string', enum: ['x'], nullable: true } } } } } } } },
      '/b': { get: { operationId: 'b', tags: ['two'], responses } },
    },
  };
  const doc = await parseOpenApi(structuredClone(v30));
  t.same((operationSchema(doc.operations[0], false).properties as any).body.properties, { n: { type: ['integer', 'null'], exclusiveMinimum: 1 }, e: { type: ['string', 'null'], enum: ['x', null] } });
  const tagged = await parseOpenApi(structuredClone(v30), { tags: ['two'] });
  t.same([tagged.operations.map((o) => o.operationId), tagged.filtered], [['b'], 1]);
  const listed = await parseOpenApi(structuredClone(v30), { operations: ['a'] });
  t.same([listed.operations.map((o) => o.operationId), listed.filtered], [['a'], 1]);
  await t.rejects(parseOpenApi(structuredClone(v30), { operations: ['nope'] }), /operations not in the document: nope/);
  await t.rejects(parseOpenApi({ ...structuredClone(v30), paths: { '/a': { get: { operationId: 'a' } } } }), /not valid: .*must have required property 'responses'/, 'an invalid document is refused with the validator\'s reason');
});

t.test('the check is warn, never ok, while an operation is left out, and names each with its reason', async (t) => {
  const { app } = await buildWithModel(t, { AGENTSVC_INTEGRATIONS: JSON.stringify({ shop: { type: 'openapi', spec: DOC }, auth: { type: 'openapi', spec: DOC, tags: ['auth'] } }) });
  const checks = await integrationsLoaded(app);
  t.same(checks['integrations:shop'], {
    check_id: 'integrations:shop',
    status: 'warn',
    detail:
      '3 of 5 operations as tools (OpenAPI 3.1.0, https://eu.shop.example/v1); 2 operation(s) left out: uploadPhoto (PUT /items/{id}/photo): its request body is only multipart/form-data; integrations send JSON, form or text bodies; whoami (GET /session): it needs the cookie parameter sid, which integrations do not send',
    fix: 'these operations cannot be called as the document describes them; leave them aside with integrations.shop.operations or .tags to silence this',
  });
  t.match(checks['integrations:auth'], { status: 'warn', detail: /^1 of 5 operations as tools \(OpenAPI 3\.1\.0, https:\/\/eu\.shop\.example\/v1\), 3 left aside by its operations\/tags filters; 1 operation\(s\) left out: whoami/ });
});
