import { Command, Flags, type Interfaces } from '@oclif/core';
import { ConfigError, loadConfig, type Config, type LoadOptions } from '../platform/config/index.js';

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>;

/** Loads and validates config once; a wrong setting ends the command with one line and exit 1. */
export abstract class BaseCommand<T extends typeof Command> extends Command {
  static baseFlags = {
    config: Flags.string({ description: 'config file (default AGENTSVC_HOME/config.json)', helpGroup: 'GLOBAL' }),
    home: Flags.string({ description: 'state folder (env AGENTSVC_HOME, default ~/.agentsvc)', helpGroup: 'GLOBAL' }),
  };

  protected flags!: BaseFlags<T>;
  protected args!: Interfaces.InferredArgs<T['args']>;
  protected cfg!: Config;
  private cleanups: (() => Promise<unknown>)[] = [];

  protected overrides(): LoadOptions['overrides'] {
    return {};
  }

  public async init(): Promise<void> {
    await super.init();
    const { flags, args } = await this.parse({ flags: this.ctor.flags, baseFlags: (this.ctor as typeof BaseCommand).baseFlags, args: this.ctor.args, strict: this.ctor.strict });
    this.flags = flags as BaseFlags<T>;
    this.args = args as Interfaces.InferredArgs<T['args']>;
    try {
      this.cfg = loadConfig({ configFile: this.flags.config, overrides: { AGENTSVC_HOME: this.flags.home, ...this.overrides() } });
    } catch (e) {
      this.fail(e);
    }
  }

  /** Register something to close when the command ends, in reverse order. */
  protected onClose(fn: () => Promise<unknown>) {
    this.cleanups.unshift(fn);
  }

  protected fail(e: unknown): never {
    const msg = e instanceof ConfigError ? e.message : ((e as { detail?: unknown }).detail ?? (e as Error).message);
    this.logToStderr(`agentsvc: ${typeof msg === 'string' ? msg : JSON.stringify(msg)}`);
    this.exit(1);
  }

  protected async finally(err: Error | undefined): Promise<unknown> {
    for (const c of this.cleanups) await c().catch(() => {});
    return super.finally(err);
  }

  protected async catch(err: Error & { exitCode?: number; oclif?: unknown }): Promise<unknown> {
    if (err.oclif || err.exitCode !== undefined) return super.catch(err);
    this.fail(err);
  }
}
