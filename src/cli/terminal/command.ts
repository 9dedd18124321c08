import { Command, Flags, type Interfaces } from '@oclif/core';
import { Api, ClientError } from './api.js';
import { resolveTarget, type Target } from './options.js';

export type ClientFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof ClientCommand)['baseFlags'] & T['flags']>;

/**
 * Base of the commands that talk to a running service (chat, sessions, doctor): --url, --key,
 * --home, --json; every failure ends the command with one line on stderr and exit 1, no stack.
 */
export abstract class ClientCommand<T extends typeof Command> extends Command {
  static baseFlags = {
    url: Flags.string({ description: 'service URL (env AGENTSVC_URL; default: what `up` wrote in AGENTSVC_HOME/run/url, else http://127.0.0.1:8080)', helpGroup: 'GLOBAL' }),
    key: Flags.string({ description: 'API key (env AGENTSVC_KEY; default AGENTSVC_HOME/admin.key)', helpGroup: 'GLOBAL' }),
    home: Flags.string({ description: 'state folder (env AGENTSVC_HOME, default ~/.agentsvc)', helpGroup: 'GLOBAL' }),
    config: Flags.string({ description: 'config file of the service: its AGENTSVC_HOME, host and port say where to find it', helpGroup: 'GLOBAL' }),
    json: Flags.boolean({ description: 'print JSON', helpGroup: 'GLOBAL' }),
  };

  protected flags!: ClientFlags<T>;
  protected args!: Interfaces.InferredArgs<T['args']>;
  protected target!: Target;
  protected api!: Api;

  public async init(): Promise<void> {
    await super.init();
    const { flags, args } = await this.parse({ flags: this.ctor.flags, baseFlags: (this.ctor as typeof ClientCommand).baseFlags, args: this.ctor.args, strict: this.ctor.strict });
    this.flags = flags as ClientFlags<T>;
    this.args = args as Interfaces.InferredArgs<T['args']>;
    let fromConfig: { home?: string; url?: string } = {};
    if (this.flags.config) {
      // The same reading (and the same one-line errors) as `up --config`.
      const { loadConfig } = await import('../../platform/config/index.js');
      try {
        const cfg = loadConfig({ configFile: this.flags.config, overrides: { AGENTSVC_HOME: this.flags.home } });
        const host = cfg.host === '0.0.0.0' ? '127.0.0.1' : cfg.host;
        fromConfig = { home: cfg.home, url: `http://${host.includes(':') ? `[${host}]` : host}:${cfg.port}` };
      } catch (e) {
        this.fail(e);
      }
    }
    this.target = resolveTarget({ ...this.flags, home: this.flags.home ?? fromConfig.home }, process.env, fromConfig.url);
    try {
      new URL(this.target.url);
    } catch {
      this.fail(new ClientError('invalid', `not a URL (from ${this.target.urlFrom}): ${this.target.url}`));
    }
    this.api = new Api(this.target);
  }

  protected json(value: unknown) {
    this.log(JSON.stringify(value, null, 2));
  }

  protected fail(e: unknown): never {
    const msg = e instanceof ClientError ? e.message : ((e as Error)?.message ?? String(e));
    this.logToStderr(`agentsvc: ${msg}`);
    this.exit(1);
  }

  protected async catch(err: Error & { exitCode?: number; oclif?: unknown }): Promise<unknown> {
    if (err.oclif || err.exitCode !== undefined) return super.catch(err);
    this.fail(err);
  }
}
