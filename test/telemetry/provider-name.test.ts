/** `gen_ai.provider.name` from a model endpoint's base URL (docs/operations.md, traces). */
import t from 'tap';
import { providerName } from '../../src/features/telemetry/traces.js';

t.test('known hosts get their well-known provider name; others are spoken to as openai', async (t) => {
  const cases: [string, string][] = [
    ['https://api.openai.com/v1', 'openai'],
    ['https://myco.openai.azure.com/openai/deployments/x', 'azure.ai.openai'],
    ['https://api.deepseek.com', 'deepseek'],
    ['https://api.groq.com/openai/v1', 'groq'],
    ['https://api.mistral.ai/v1', 'mistral_ai'],
    ['https://generativelanguage.googleapis.com/v1beta/openai/', 'gcp.gemini'],
    ['http://127.0.0.1:11434/v1', 'openai'],
    ['https://api.deepseek.com.example.org/v1', 'openai'],
    ['not a url', 'openai'],
  ];
  for (const [url, name] of cases) t.equal(providerName(url), name, url);
});
