import { ClientCommand } from '../terminal/command.js';
import { credentialKey, readCredentials, writeCredentials } from '../terminal/credentials.js';

export default class Logout extends ClientCommand<typeof Logout> {
  static summary = 'Sign out: end the sign-in at the service and forget it';
  static description = 'Ends the sign-in that `agentsvc login` stored for this service (POST /api/auth/signout) and removes it from ~/.config/agentsvc/credentials.json. See docs/identity.md.';
  static examples = ['<%= config.bin %> logout'];

  async run(): Promise<void> {
    const url = this.target.url;
    const all = readCredentials();
    const c = all[credentialKey(url)];
    if (!c) return this.log(`not signed in to ${url}`);
    // Revoked at the service first; forgotten here even if the service cannot be reached.
    const r = await fetch(`${url}/api/auth/signout`, { method: 'POST', headers: { authorization: `Bearer ${c.token}` } }).catch(() => null);
    delete all[credentialKey(url)];
    writeCredentials(all);
    this.log(r?.ok ? `signed out of ${url}` : `forgot the sign-in for ${url} (the service did not confirm the sign-out)`);
  }
}
