/**
 * Configuration templates (GET /api/registry/templates): a starting entry for each kind of thing
 * an operator adds by configuration, per driver. `config_key` names where it goes in config.json.
 */
export interface Template {
  type_key: string;
  subtype: string;
  driver: string;
  description: string;
  config_key: string | null;
  template: unknown;
}

export const TEMPLATES: Template[] = [
  {
    type_key: 'mcp',
    subtype: 'stdio',
    driver: 'npx',
    description: 'An MCP server from npm, started with npx (it runs on the service host)',
    config_key: 'mcp',
    template: { everything: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything', 'stdio'], env: {} } },
  },
  {
    type_key: 'mcp',
    subtype: 'stdio',
    driver: 'node',
    description: 'An MCP server from an installed package, started with node on its path (no network at start)',
    config_key: 'mcp',
    template: { everything: { command: 'node', args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'], env: {}, timeout_ms: 60000 } },
  },
  {
    type_key: 'mcp',
    subtype: 'stdio',
    driver: 'uvx',
    description: 'A Python MCP server started with uvx',
    config_key: 'mcp',
    template: { fetch: { command: 'uvx', args: ['mcp-server-fetch'], env: {} } },
  },
  {
    type_key: 'mcp',
    subtype: 'stdio',
    driver: 'docker',
    description: 'An MCP server in a container, speaking stdio',
    config_key: 'mcp',
    template: { github: { command: 'docker', args: ['run', '-i', '--rm', '-e', 'GITHUB_PERSONAL_ACCESS_TOKEN', 'ghcr.io/github/github-mcp-server'], env: { GITHUB_PERSONAL_ACCESS_TOKEN: '<token>' } } },
  },
  {
    type_key: 'mcp',
    subtype: 'http',
    driver: 'streamable-http',
    description: 'A remote MCP server over streamable HTTP',
    config_key: 'mcp',
    template: { remote: { url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer <token>' }, timeout_ms: 60000 } },
  },
  {
    type_key: 'integration',
    subtype: 'openapi',
    driver: 'bearer',
    description: "An OpenAPI 3 API as tools; the token comes from the session's env or the user's default env bucket",
    config_key: 'integrations',
    template: { petstore: { type: 'openapi', spec: 'https://petstore3.swagger.io/api/v3/openapi.json', base_url: 'https://petstore3.swagger.io/api/v3', auth: { type: 'bearer', env: 'PETSTORE_TOKEN' } } },
  },
  {
    type_key: 'integration',
    subtype: 'openapi',
    driver: 'header',
    description: 'An OpenAPI 3 API whose key goes in a header',
    config_key: 'integrations',
    template: { weather: { type: 'openapi', spec: './weather-openapi.json', auth: { type: 'header', name: 'X-Api-Key', env: 'WEATHER_API_KEY' }, operations: ['getForecast'] } },
  },
  {
    type_key: 'integration',
    subtype: 'openapi',
    driver: 'none',
    description: 'A public OpenAPI 3 API',
    config_key: 'integrations',
    template: { public: { type: 'openapi', spec: 'https://api.example.com/openapi.json' } },
  },
  {
    type_key: 'skill',
    subtype: 'session',
    driver: 'upload',
    description: 'A body for POST /api/sessions/{session_id}/skills:upload',
    config_key: null,
    template: {
      name: 'my-skill',
      files: [
        { path: 'SKILL.md', content: '---\nname: my-skill\ndescription: What the skill does and when to use it.\n---\n# My skill\n\nSteps...\n' },
        { path: 'scripts/run.sh', content: '#!/bin/sh\necho hello\n' },
      ],
    },
  },
  {
    type_key: 'plugin',
    subtype: 'module',
    driver: 'mjs',
    description: 'An outside plugin: list its path or npm name in AGENTSVC_PLUGINS (see templates/plugin-starter)',
    config_key: 'AGENTSVC_PLUGINS',
    template: { AGENTSVC_PLUGINS: './my-plugin/index.mjs', plugin_options: { 'my-plugin': { greeting: 'hello' } } },
  },
];
