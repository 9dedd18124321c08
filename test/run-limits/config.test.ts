import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/platform/config/index.js';

const home = mkdtempSync(join(tmpdir(), 'agentsvc-limits-cfg-'));

t.test('the ceilings: defaults, values, and a wrong one names itself', async (t) => {
  t.same(loadConfig({ env: { AGENTSVC_HOME: home } }).runLimits, { maxSeconds: 3600, maxToolCalls: 500, loopRepeats: 5 });
  t.same(loadConfig({ env: { AGENTSVC_HOME: home, AGENTSVC_RUN_MAX_SECONDS: '60', AGENTSVC_RUN_MAX_TOOL_CALLS: '20', AGENTSVC_LOOP_REPEATS: '3' } }).runLimits, {
    maxSeconds: 60,
    maxToolCalls: 20,
    loopRepeats: 3,
  });
  for (const [setting, value] of [
    ['AGENTSVC_RUN_MAX_SECONDS', '0'],
    ['AGENTSVC_RUN_MAX_SECONDS', '1.5'],
    ['AGENTSVC_RUN_MAX_TOOL_CALLS', 'lots'],
    ['AGENTSVC_LOOP_REPEATS', '1'],
  ]) {
    const err = (() => {
      try {
        loadConfig({ env: { AGENTSVC_HOME: home, [setting]: value } });
      } catch (e) {
        return e;
      }
    })();
    t.ok(err instanceof ConfigError, `${setting}=${value}: ConfigError`);
    t.equal((err as ConfigError).setting, setting);
  }
});
