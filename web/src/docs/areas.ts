/**
 * The areas of the REST interface, in the order the page shows them, each recognised by its paths
 * (the document's tags name modules, not these areas). The first pattern that matches a path decides, so the
 * narrower areas under /api/sessions come before Sessions itself.
 */

const MATCHERS: [string, RegExp][] = [
  ['Health, config, identity', /^\/(healthz|metrics|api\/(health|config|auth|openapi\.json)(\/|$))/],
  ['Workspace files of a session', /^\/api\/sessions\/\{session_id\}\/(ls|files|upload|download-dir)(\/|$)/],
  ['Sharing, export, import, tokenize', /^\/api\/(share\/|sessions\/(\{session_id\}\/(share|export)|preview-import|import|tokenize)(\/|$))/],
  ['Background tasks and session skills', /^\/api\/sessions\/\{session_id\}\/(background-tasks|skill)/],
  ['Sessions', /^\/api\/sessions(\/|$)/],
  ['Global skills', /^\/api\/(skills|skill-store)(\/|$)/],
  ['Memories', /^\/api\/memories(\/|$)/],
  ['Solutions', /^\/api\/solutions(\/|$)/],
  ['Production solutions (multi-agent DAG)', /^\/api\/prod_solution(\/|$)/],
  ['Production agents', /^\/api\/prod_agents(\/|$)/],
  ['API keys', /^\/api\/user\/api-keys(\/|$)/],
  ['Environment and user settings', /^\/api\/(env|user|users\/me)(\/|$)/],
  ['Scheduled tasks', /^\/api\/scheduled-tasks(\/|$)/],
  ['Admin and production users', /^\/api\/(admin|prod_users)(\/|$)/],
  ['Workspaces and issues', /^\/api\/prod_workspaces(\/|$)/],
  ['Published apps, registry, GIS, annotations, frontend config', /^\/api\/(published-apps|registry|gis|payloads|frontend_config)(\/|$)/],
];

/** The order of the areas (Sessions first among the session ones). */
export const AREA_ORDER = [
  'Health, config, identity',
  'Sessions',
  'Workspace files of a session',
  'Sharing, export, import, tokenize',
  'Background tasks and session skills',
  ...MATCHERS.slice(5).map(([name]) => name),
  'Other routes',
];

export function areaOf(path: string): string {
  return MATCHERS.find(([, re]) => re.test(path))?.[0] ?? 'Other routes';
}

/** An id for a link to an area (`#area-...`). */
export const areaId = (name: string) => `area-${name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/-$/, '')}`;
