import type { Check, CheckDeps, CheckResult } from './checks.js';
import type { ToolRegistry } from '../../core/tools/registry.js';
import type { PluginCheck } from '../plugin-host/loader.js';

/**
 * The plugins' lines of GET /api/env/check: each check a plugin declared (`<plugin>:<id>`) and
 * the health of each tool provider that reports one (`plugin:<provider>`, e.g. a crashed MCP
 * server). Listed when the stream runs, so providers added later are included.
 */
export function pluginChecks(checks: PluginCheck[], registry: ToolRegistry): () => Check[] {
  const wrap = (id: string, run: (deps: CheckDeps) => Promise<{ status: CheckResult['status']; detail: string; fix?: string | null }>): Check => ({
    id,
    async run(deps) {
      const r = await run(deps);
      const status = r.status === 'ok' || r.status === 'warn' || r.status === 'fail' ? r.status : 'fail';
      return { id, status, message: String(r.detail ?? ''), fix: status === 'ok' ? null : (r.fix ?? 'see the service log in AGENTSVC_HOME/logs') };
    },
  });
  return () => [
    ...checks.map((c) => wrap(c.id, (deps) => c.run(deps.viewer))),
    ...registry
      .providerList()
      .filter((p) => p.health)
      .map((p) => wrap(`plugin:${p.name}`, () => p.health!())),
  ];
}
