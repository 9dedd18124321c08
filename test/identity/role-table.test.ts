import t from 'tap';
import { CLIENT_EVENT_NAMES } from '../../src/core/events/protocol.js';
import { EVENT_ROLES, ROUTE_ROLES } from '../../src/features/identity/role-table.js';
import { build } from '../helpers/app.js';

// The role table (src/features/identity/role-table.ts, docs/identity.md) decides every route and
// socket event: a route added without a line fails here, and so does a line for a route that is gone.

t.test('every route the service registers has exactly one decision, and every decision a route', async (t) => {
  const app = await build(t);
  const routes = app.service.app.routeKeys;
  const keys = new Set(routes.map((r) => r.key));
  t.same(routes.filter((r) => !(r.key in ROUTE_ROLES)).map((r) => r.key), [], 'routes without a decision');
  t.same(Object.keys(ROUTE_ROLES).filter((k) => !keys.has(k)), [], 'decisions for routes that do not exist');
  t.same(routes.filter((r) => r.public !== (ROUTE_ROLES[r.key] === 'public')).map((r) => r.key), [], 'public in the table exactly when public on the route');

  const doc = await (await fetch(`${app.url}/api/openapi.json`)).json();
  const ops = Object.values(doc.paths as Record<string, Record<string, { 'x-roles'?: string[] }>>).flatMap((item) => Object.values(item));
  t.same(ops.filter((o) => !Array.isArray(o['x-roles'])).length, 0, 'every operation of the OpenAPI document carries x-roles');
  t.same(doc.paths['/api/sessions'].post['x-roles'], ['admin', 'member']);
  t.same(doc.paths['/api/sessions'].get['x-roles'], ['admin', 'member', 'viewer']);
  t.same(doc.paths['/api/admin/users/{user_id}'].patch['x-roles'], ['admin']);
  t.same(doc.paths['/api/health'].get['x-roles'], ['public']);
});

t.test('every client socket event has a decision; a viewer may not send, stop or compact', async (t) => {
  t.same(Object.keys(EVENT_ROLES).sort(), [...CLIENT_EVENT_NAMES].sort());
  t.same(
    CLIENT_EVENT_NAMES.filter((e) => !EVENT_ROLES[e].includes('viewer')),
    ['chat:send', 'chat:stop', 'chat:compact'],
  );
});
