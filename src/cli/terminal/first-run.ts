import { join } from 'node:path';
import { type Api, ClientError } from './api.js';
import type { Target } from './options.js';
import type { Style } from './style.js';

/**
 * What `agentsvc chat` checks before its prompt, so a first run explains itself instead of
 * failing at the first message: that the service answers (else how to start it), and that its
 * model endpoint does (the service's `model` check, POST /api/env/check/model: reachable, key
 * accepted), else what is wrong and how to fix it. One screen each; the model one does not stop
 * the chat (the check may be wrong about an endpoint without a model list).
 */

export interface ModelCheck {
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  fix: string | null;
}

/** The service's model check, or null when the service cannot run it (an older service, an error). */
export async function modelCheck(api: Api): Promise<ModelCheck | null> {
  try {
    return await api.json<ModelCheck>('POST', '/api/env/check/model');
  } catch (e) {
    if (e instanceof ClientError && (e.kind === 'down' || e.kind === 'auth')) throw e;
    return null;
  }
}

/** The service does not answer: how to start it, and what the first start does. */
export function serviceDownScreen(s: Style, target: Target, why: string): string[] {
  const config = join(target.home, 'config.json');
  return [
    s.red(`agentsvc is not running at ${target.url}`) + s.gray(` (${why}; address from ${target.urlFrom})`),
    '',
    s.bold('Next steps'),
    `  1. Start the service in another terminal:   ${s.cyan('agentsvc up')}`,
    s.gray(`     the first start creates ${target.home}: its database and the key this CLI uses`),
    `  2. Tell it which model to call (any OpenAI-compatible endpoint), in the environment of`,
    `     \`agentsvc up\` or in ${config}:`,
    s.gray('       OPENAI_BASE_URL=https://api.openai.com/v1  OPENAI_API_KEY=sk-…  AGENTSVC_MODEL=gpt-4o-mini'),
    `  3. Then chat:   ${s.cyan('agentsvc chat')}      check everything:   ${s.cyan('agentsvc doctor')}`,
    s.gray('  A service elsewhere: --url URL or AGENTSVC_URL.'),
  ];
}

/** Words of `text` in lines of at most `width` characters, each indented. */
function wrapped(text: string, indent: string, width = Math.min(process.stdout.columns || 100, 100) - 2): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width - indent.length) {
      lines.push(indent + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(indent + line);
  return lines;
}

/** The model endpoint is not ready: what the service found, and how to fix it. */
export function modelScreen(s: Style, target: Pick<Target, 'home'>, check: ModelCheck): string[] {
  if (check.status === 'warn') return [s.yellow(`model endpoint: ${check.detail}`) + s.gray(' (answers may still work; `agentsvc doctor` checks again)')];
  const config = join(target.home, 'config.json');
  return [
    s.red('The model endpoint is not ready: answers will fail until it is.'),
    ...wrapped(check.detail, '  '),
    '',
    s.bold('To fix it'),
    ...wrapped(check.fix ?? 'check OPENAI_BASE_URL and OPENAI_API_KEY, then restart `agentsvc up`', '  '),
    `  for example in ${config}:`,
    s.gray('    {"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "sk-…"}'),
    s.gray('  a local model works too, e.g. Ollama: OPENAI_BASE_URL=http://127.0.0.1:11434/v1 (any key)'),
    `  then ${s.cyan('agentsvc doctor')} checks it again.`,
  ];
}

/** OPENAI_BASE_URL's default: with no key beside it, nothing was configured. */
const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * What `agentsvc up` says about its default model's endpoint at start: null when nothing was
 * configured (no key, the default endpoint: said without a network call), else the service's own
 * `model` check (src/features/diagnostics/service-checks.ts), run once.
 */
export async function upModelCheck(model: { baseUrl: string; apiKey: string }, check: () => Promise<ModelCheck>): Promise<ModelCheck> {
  if (!model.apiKey && model.baseUrl.replace(/\/$/, '') === DEFAULT_BASE_URL) {
    return {
      status: 'fail',
      detail: `no model is configured: OPENAI_API_KEY is empty and OPENAI_BASE_URL is its default (${DEFAULT_BASE_URL})`,
      fix: 'set OPENAI_BASE_URL (any OpenAI-compatible endpoint), OPENAI_API_KEY and AGENTSVC_MODEL in the environment of `agentsvc up` or in AGENTSVC_HOME/config.json, then restart it',
    };
  }
  return check().catch((e) => ({ status: 'warn' as const, detail: `the model check failed: ${(e as Error).message}`, fix: null }));
}

/** After "listening": where to go next. */
export function nextSteps(s: Style, url: string): string[] {
  const base = url.replace('://0.0.0.0', '://127.0.0.1').replace(/\/$/, '');
  return [
    s.bold('Next steps'),
    `  web console   ${s.cyan(`${base}/`)}   (sign in with the key in admin.key)`,
    `  API docs      ${s.cyan(`${base}/api/docs`)}`,
    `  chat here     ${s.cyan('agentsvc chat')}   (another terminal; \`agentsvc doctor\` checks everything)`,
  ];
}
