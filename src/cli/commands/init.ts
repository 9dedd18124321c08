import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { Command, Flags, type Interfaces } from '@oclif/core';
import {
  type ChatAnswer,
  type ModelChoice,
  type ModelsAnswer,
  listModels,
  mergeModelSettings,
  normalUrl,
  overriddenBy,
  PRESETS,
  presetById,
  presetFor,
  readConfigFile,
  tryChat,
  writeConfigFile,
} from '../terminal/endpoint.js';
import { type Style, styleFor } from '../terminal/style.js';

/** Raised to end the command with one line on stderr and exit 1. */
class Stop extends Error {}

export default class Init extends Command {
  static summary = 'Point agentsvc at a model endpoint: asks, checks it live, writes config.json, runs doctor';
  static description =
    'On a terminal it asks for the endpoint (presets: OpenAI, Ollama, vLLM, LiteLLM, or any OpenAI-compatible URL), the API key (not echoed) and the model (from the endpoint\'s GET /models when it answers), ' +
    'checks them with one small chat completion, writes the model settings into AGENTSVC_HOME/config.json (other settings there are kept; an existing file is changed only after you confirm, or with --yes), then runs `agentsvc doctor`. ' +
    'With --yes, or without a terminal, it asks nothing: the flags say everything. Exit 1 when the check fails (nothing is written) or a flag is wrong.';
  static examples = [
    '<%= config.bin %> init',
    '<%= config.bin %> init --preset ollama --model llama3.2 --yes',
    'OPENAI_API_KEY=sk-... <%= config.bin %> init --preset openai --model gpt-4o-mini --api-key-env OPENAI_API_KEY --yes',
    '<%= config.bin %> init --base-url http://gpu-box:8000/v1 --model Qwen/Qwen3-8B --yes',
  ];
  static flags = {
    preset: Flags.string({ description: 'endpoint preset', options: PRESETS.map((p) => p.id) }),
    'base-url': Flags.string({ description: 'the endpoint (OPENAI_BASE_URL), e.g. http://127.0.0.1:11434/v1' }),
    model: Flags.string({ description: 'default model id (AGENTSVC_MODEL)' }),
    'api-key-env': Flags.string({ description: 'name of the environment variable that holds the API key: config.json names it instead of holding the key' }),
    yes: Flags.boolean({ char: 'y', description: 'ask nothing: take the flags, and update an existing config.json' }),
    'no-doctor': Flags.boolean({ description: 'do not run `agentsvc doctor` afterwards' }),
    home: Flags.string({ description: 'state folder (env AGENTSVC_HOME, default ~/.agentsvc)', helpGroup: 'GLOBAL' }),
    config: Flags.string({ description: 'config file to write (default AGENTSVC_HOME/config.json)', helpGroup: 'GLOBAL' }),
  };

  private s!: Style;

  async run(): Promise<void> {
    const { flags } = await this.parse(Init);
    this.s = styleFor(process.stdout);
    const home = resolve(flags.home ?? (process.env.AGENTSVC_HOME || join(homedir(), '.agentsvc')));
    const file = flags.config ? resolve(flags.config) : join(home, 'config.json');
    const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY) && !flags.yes;
    if (flags['api-key-env'] && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(flags['api-key-env'])) this.stop(`--api-key-env must name an environment variable, not ${JSON.stringify(flags['api-key-env'])}`);
    if (flags['base-url'] && !normalUrl(flags['base-url'])) this.stop(`--base-url must be an http(s) URL, not ${JSON.stringify(flags['base-url'])}`);
    let existing: Record<string, unknown> | null;
    try {
      existing = readConfigFile(file);
    } catch (e) {
      this.stop(`cannot read ${file}: ${(e as Error).message} (fix or move it, then run init again)`);
    }
    try {
      const choice = interactive ? await this.ask(file, existing, flags) : await this.fromFlags(file, existing, flags);
      if (!choice) {
        this.log('nothing written');
        this.exit(1);
      }
      writeConfigFile(file, mergeModelSettings(existing, choice));
      this.report(file, choice);
    } catch (e) {
      if (e instanceof Stop) this.stop(e.message);
      throw e;
    }
    if (flags['no-doctor']) return;
    this.log(`\n${this.s.bold('agentsvc doctor')}`);
    try {
      await this.config.runCommand('doctor', ['--home', home]);
    } catch (e) {
      // init's own work is done and checked: its exit status is that, not the doctor's (which
      // fails while `agentsvc up` is not running yet, the usual case here).
      if ((e as { oclif?: { exit?: number } }).oclif?.exit === undefined) throw e;
      process.exitCode = 0;
      this.log(this.s.gray('(a service that is not running yet fails the first check: `agentsvc up` starts it)'));
    }
  }

  private stop(message: string): never {
    this.logToStderr(`agentsvc: ${message}`);
    this.exit(1);
  }

  /** --yes or no terminal: every answer from the flags; any failed check stops with nothing written. */
  private async fromFlags(file: string, existing: Record<string, unknown> | null, flags: InitFlags): Promise<ModelChoice> {
    if (existing && !flags.yes) throw new Stop(`${file} exists: pass --yes to update its model settings (its other settings are kept)`);
    const preset = flags.preset ? presetById(flags.preset)! : flags['base-url'] ? presetFor(flags['base-url']) : null;
    if (!preset) throw new Stop('say which endpoint: --preset (openai, ollama, vllm, litellm) or --base-url URL (run it on a terminal to be asked)');
    const baseUrl = normalUrl(flags['base-url'] ?? preset.baseUrl);
    if (!baseUrl) throw new Stop('--base-url is needed with --preset custom');
    const key = this.keyFromEnv(flags);
    if (preset.needsKey && !key.apiKey) throw new Stop(`${preset.label} needs an API key: put it in an environment variable and pass --api-key-env NAME`);
    const list = await listModels(baseUrl, key.apiKey);
    if (list.kind === 'auth' || list.kind === 'down') throw new Stop(`${list.detail}; nothing written`);
    const model = flags.model ?? (preset.model || (list.kind === 'ok' ? list.models[0] : ''));
    if (!model) throw new Stop(`pass --model (${baseUrl} lists no models)`);
    if (list.kind === 'ok' && list.models.length) this.log(`${baseUrl} offers ${list.models.length} model${list.models.length === 1 ? '' : 's'}`);
    const chat = await tryChat(baseUrl, key.apiKey, model);
    if (!chat.ok) throw new Stop(`${chat.detail}; nothing written`);
    this.log(this.chatLine(model, chat));
    return { baseUrl, model, ...key };
  }

  /** The key named by --api-key-env (the name is written), else OPENAI_API_KEY's (not written: the environment wins anyway). */
  private keyFromEnv(flags: InitFlags): Pick<ModelChoice, 'apiKey' | 'apiKeyEnv' | 'keyFromEnv'> {
    const name = flags['api-key-env'];
    if (name) {
      const value = process.env[name];
      if (!value) throw new Stop(`--api-key-env ${name}: that variable is not set here (agentsvc reads it wherever it runs)`);
      return { apiKey: value, apiKeyEnv: name };
    }
    return process.env.OPENAI_API_KEY ? { apiKey: process.env.OPENAI_API_KEY, keyFromEnv: true } : { apiKey: '' };
  }

  private chatLine(model: string, chat: Extract<ChatAnswer, { ok: true }>): string {
    const said = chat.text ? ` "${chat.text.replace(/\s+/g, ' ').slice(0, 40)}"` : '';
    return `${this.s.green('✔')} model ${model} answered${said} in ${chat.ms < 1000 ? `${chat.ms} ms` : `${(chat.ms / 1000).toFixed(1)} s`}`;
  }

  /** On a terminal: the questions, with the endpoint checked as soon as it is known. */
  private async ask(file: string, existing: Record<string, unknown> | null, flags: InitFlags): Promise<ModelChoice | null> {
    const { Prompts } = await import('../terminal/prompts.js');
    const s = this.s;
    const p = new Prompts(s);
    try {
      p.note(s.bold('agentsvc init') + s.gray(` · the model endpoint agentsvc calls, written to ${file}`));
      if (existing) {
        const update = await p.select(`${basename(file)} exists. Update its model settings? (its other settings are kept)`, [
          { value: 'yes', label: 'Yes, update them' },
          { value: 'no', label: 'No, leave the file as it is' },
        ]);
        if (update !== 'yes') return null;
      }
      const wasUrl = typeof existing?.OPENAI_BASE_URL === 'string' ? existing.OPENAI_BASE_URL : undefined;
      const presetId = await p.select(
        'Which model endpoint?',
        PRESETS.map((x) => ({ value: x.id, label: x.label, hint: x.hint })),
        { initial: flags.preset ?? (wasUrl ? presetFor(wasUrl).id : 'openai') },
      );
      if (!presetId) return null;
      const preset = presetById(presetId)!;
      let baseUrl: string | null = null;
      let apiKey = '';
      let apiKeyEnv: string | undefined;
      let list: ModelsAnswer | null = null;
      let askUrl = true;
      for (;;) {
        if (askUrl) {
          const initial = flags['base-url'] ?? (preset.id === 'custom' ? (wasUrl ?? '') : preset.baseUrl);
          baseUrl = await p.text('Base URL (OpenAI-compatible, usually ending in /v1)', { initial, check: (v) => (normalUrl(v) ? null : 'an http:// or https:// URL, please') });
          if (baseUrl === null) return null;
          baseUrl = normalUrl(baseUrl)!;
        }
        if (flags['api-key-env']) {
          apiKeyEnv = flags['api-key-env'];
          apiKey = process.env[apiKeyEnv] ?? '';
          if (!apiKey) throw new Stop(`--api-key-env ${apiKeyEnv}: that variable is not set here`);
        } else {
          const typed = await p.text(`API key${preset.needsKey ? '' : ' (Enter for none)'}`, {
            mask: true,
            check: (v) => (preset.needsKey && !v ? `${preset.label} needs a key` : null),
          });
          if (typed === null) return null;
          apiKey = typed;
        }
        p.working(`checking ${baseUrl}/models …`);
        list = await listModels(baseUrl!, apiKey);
        p.working('');
        if (list.kind === 'ok' || list.kind === 'nolist') {
          p.note(list.kind === 'ok' ? `${s.green('✔')} ${baseUrl} answers: ${list.models.length} model${list.models.length === 1 ? '' : 's'}` : s.yellow(`! ${list.detail} (chat may still work)`));
          break;
        }
        p.note(s.red(`✘ ${list.detail}`));
        if (list.kind === 'auth' && !flags['api-key-env']) {
          askUrl = false;
          continue;
        }
        const next = await p.select('What now?', [
          { value: 'url', label: 'Enter another URL' },
          { value: 'keep', label: 'Keep this one', hint: 'the server may not run yet' },
          { value: 'cancel', label: 'Cancel', hint: 'write nothing' },
        ]);
        if (next === 'keep') break;
        if (next !== 'url') return null;
        askUrl = true;
      }
      for (;;) {
        const wasModel = typeof existing?.AGENTSVC_MODEL === 'string' ? existing.AGENTSVC_MODEL : undefined;
        const initial = flags.model ?? wasModel ?? preset.model;
        const offered = list?.kind === 'ok' ? list.models : [];
        const model = offered.length
          ? await p.select(
              'Default model',
              offered.map((id) => ({ value: id, label: id })),
              { initial: offered.includes(initial) ? initial : undefined, custom: true },
            )
          : await p.text('Default model id', { initial, check: (v) => (v ? null : 'a model id, please') });
        if (model === null) return null;
        p.working(`asking ${model} for one word …`);
        const chat = await tryChat(baseUrl!, apiKey, model);
        p.working('');
        if (chat.ok) {
          p.note(this.chatLine(model, chat));
          return { baseUrl: baseUrl!, model, apiKey, apiKeyEnv };
        }
        p.note(s.red(`✘ ${chat.detail}`));
        const next = await p.select('What now?', [
          { value: 'model', label: 'Choose another model' },
          { value: 'write', label: 'Write the settings anyway' },
          { value: 'cancel', label: 'Cancel', hint: 'write nothing' },
        ]);
        if (next === 'write') return { baseUrl: baseUrl!, model, apiKey, apiKeyEnv };
        if (next !== 'model') return null;
      }
    } finally {
      await p.close();
    }
  }

  private report(file: string, c: ModelChoice) {
    const s = this.s;
    this.log(`${s.green('✔')} wrote ${file} (mode 0600)`);
    this.log(`  OPENAI_BASE_URL=${c.baseUrl}  AGENTSVC_MODEL=${c.model}`);
    this.log(`  key: ${keySaid(c)}`);
    const env = overriddenBy(process.env).filter((k) => !(c.apiKeyEnv === k));
    if (env.length) this.log(s.yellow(`note: ${env.join(', ')} set in this environment win over config.json for every agentsvc started from it`));
    this.log(`next: ${s.cyan('agentsvc up')} (restart it if it runs: it reads config.json when it starts), then ${s.cyan('agentsvc chat')}`);
  }
}

type InitFlags = Interfaces.InferredFlags<typeof Init.flags>;

function keySaid(c: ModelChoice): string {
  if (c.apiKeyEnv) return `the key from $${c.apiKeyEnv} (the models entry names it; set it wherever agentsvc runs)`;
  if (c.keyFromEnv) return 'the key from OPENAI_API_KEY in the environment (not written: set it wherever agentsvc runs)';
  return c.apiKey ? 'OPENAI_API_KEY (the key you typed)' : 'no API key';
}
