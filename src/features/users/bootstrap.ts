import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { UserService } from './service.js';

/**
 * First start: user `admin` with an admin key whose plaintext goes to AGENTSVC_HOME/admin.key
 * (0600). Later starts leave both alone.
 */
export async function bootstrapAdmin(home: string, users: UserService): Promise<{ created: boolean; keyFile: string }> {
  const keyFile = join(home, 'admin.key');
  const { user, created } = await users.ensureUser('admin', { admin: true });
  if (!created && existsSync(keyFile)) return { created: false, keyFile };
  if (!created && (await users.listKeys(user.id)).length > 0) return { created: false, keyFile };
  const { plaintext } = await users.createKey(user.id, 'admin');
  writeFileSync(keyFile, plaintext + '\n', { mode: 0o600 });
  return { created: true, keyFile };
}
