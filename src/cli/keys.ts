import { Flags, type Command } from '@oclif/core';
import { BaseCommand } from './base.js';
import { openDatabase } from '../platform/db/index.js';
import { UserService } from '../features/users/service.js';
import type { User } from '../platform/db/entities.js';

/** Shared by the `keys *` commands: opens the store (joining a running `up`) and resolves --user. */
export abstract class KeysCommand<T extends typeof Command> extends BaseCommand<T> {
  static flags = {
    user: Flags.string({ description: 'username (default admin)', default: 'admin' }),
    json: Flags.boolean({ description: 'print JSON' }),
  };

  protected async service(): Promise<UserService> {
    const db = await openDatabase(this.cfg, { migrate: true, poolMax: 2, role: 'cli' }).catch((e) => this.fail(e));
    this.onClose(() => db.close());
    return new UserService(db.em);
  }

  protected async user(users: UserService, create = false): Promise<User> {
    const name = (this.flags as { user: string }).user;
    if (create) return (await users.ensureUser(name, { admin: name === 'admin' })).user;
    const u = await users.findUser(name);
    if (!u) this.fail(new Error(`no user ${name}${create ? '' : ' (check the name, or add --create-user to make it)'}`));
    return u;
  }

  protected print(value: unknown, text: string) {
    this.log((this.flags as { json?: boolean }).json ? JSON.stringify(value, null, 2) : text);
  }
}
