import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/platform/config/index.js';

// docs/models-and-usage.md: AGENTSVC_MODELS as a JSON list (the comma form still works), AGENTSVC_BUDGETS,
// AGENTSVC_MODEL_RETRIES, AGENTSVC_TIMEZONE; a wrong one names itself.

const home = mkdtempSync(join(tmpdir(), 'agentsvc-models-cfg-'));
const env = (e: Record<string, string>) => ({ AGENTSVC_HOME: home, OPENAI_BASE_URL: 'http://main.example/v1', OPENAI_API_KEY: 'sk-main', ...e });

t.test('a JSON list of models with endpoints, keys by env name, prices and fallbacks', async (t) => {
  const models = [
    { id: 'gpt-x', price: { input: 2.5, output: 10 }, fallback: ['local'] },
    { id: 'local', base_url: 'http://127.0.0.1:11434/v1/', context_window: 8192 },
    { id: 'proxy', base_url: 'https://litellm.example/v1', api_key_env: 'PROXY_KEY', price: { input: 1, output: 2, cached_input: 0.25 } },
  ];
  const c = loadConfig({ env: env({ AGENTSVC_MODEL: 'gpt-x', AGENTSVC_MODELS: JSON.stringify(models), PROXY_KEY: 'sk-proxy' }) });
  t.same(c.model.models, ['gpt-x', 'local', 'proxy']);
  t.same(c.model.entries, [
    { id: 'gpt-x', baseUrl: 'http://main.example/v1', apiKey: 'sk-main', contextWindow: 128000, price: { input: 2.5, output: 10, cached_input: 2.5 }, fallback: ['local'] },
    { id: 'local', baseUrl: 'http://127.0.0.1:11434/v1', apiKey: '', contextWindow: 8192, price: null, fallback: [] },
    { id: 'proxy', baseUrl: 'https://litellm.example/v1', apiKey: 'sk-proxy', contextWindow: 128000, price: { input: 1, output: 2, cached_input: 0.25 }, fallback: [] },
  ]);
  t.equal(c.model.retries, 3);
  t.notMatch(JSON.stringify(c.settings), /sk-proxy/, 'a key named by api_key_env is no setting of ours');
});

t.test('config.json `models` and `budgets` lists; the old comma form', async (t) => {
  const file = join(home, 'config.json');
  writeFileSync(file, JSON.stringify({ models: [{ id: 'a' }, { id: 'b', fallback: ['a'] }], budgets: [{ period: 'day', max_cost: 5 }] }));
  const c = loadConfig({ env: env({ AGENTSVC_MODEL: 'b' }), configFile: file });
  t.same(c.model.models, ['a', 'b']);
  t.same(c.budgets, [{ period: 'day', max_tokens: null, max_cost: 5 }]);
  t.same(loadConfig({ env: env({ AGENTSVC_MODEL: 'm', AGENTSVC_MODELS: ' x, y ' }) }).model.models, ['m', 'x', 'y']);
});

t.test('wrong models, budgets, retries or time zone name their setting', async (t) => {
  const cases: [Record<string, string>, string, RegExp][] = [
    [{ AGENTSVC_MODELS: '[{"id":"a","fallback":["nope"]}]' }, 'AGENTSVC_MODELS', /fallback nope is not in the list/],
    [{ AGENTSVC_MODELS: '[{"id":"a","base_url":"ftp://x"}]' }, 'AGENTSVC_MODELS', /base_url/],
    [{ AGENTSVC_MODELS: '[{"id":"a","api_key_env":"NOT_SET_ANYWHERE"}]' }, 'AGENTSVC_MODELS', /NOT_SET_ANYWHERE is not set/],
    [{ AGENTSVC_MODELS: '[{"id":"a"},{"id":"a"}]' }, 'AGENTSVC_MODELS', /listed twice/],
    [{ AGENTSVC_MODELS: '[{"id":"a","price":{"input":-1,"output":1}}]' }, 'AGENTSVC_MODELS', /price/],
    [{ AGENTSVC_MODELS: '[{"id":"a","key":"sk-inline"}]' }, 'AGENTSVC_MODELS', /key/],
    [{ AGENTSVC_MODELS: '[nope' }, 'AGENTSVC_MODELS', /not valid JSON/],
    [{ AGENTSVC_BUDGETS: '[{"period":"week","max_cost":1}]' }, 'AGENTSVC_BUDGETS', /period/],
    [{ AGENTSVC_BUDGETS: '[{"period":"day"}]' }, 'AGENTSVC_BUDGETS', /max_tokens or max_cost/],
    [{ AGENTSVC_MODEL_RETRIES: '-1' }, 'AGENTSVC_MODEL_RETRIES', /./],
    [{ AGENTSVC_TIMEZONE: 'Mars/Olympus' }, 'AGENTSVC_TIMEZONE', /IANA/],
  ];
  for (const [e, setting, why] of cases) {
    let err: unknown;
    try {
      loadConfig({ env: env(e) });
    } catch (x) {
      err = x;
    }
    t.ok(err instanceof ConfigError, `${JSON.stringify(e)}: ConfigError`);
    t.equal((err as ConfigError)?.setting, setting);
    t.match((err as Error)?.message, why);
  }
});
