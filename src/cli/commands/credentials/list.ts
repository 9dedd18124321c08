import { ClientCommand } from '../../terminal/command.js';

interface Credential {
  model_id: string;
  personal_key: 'allowed' | 'required';
  set: boolean;
  masked: string | null;
  readable: boolean | null;
  updated_at: string | null;
}

export default class CredentialsList extends ClientCommand<typeof CredentialsList> {
  static summary = 'Your own API keys for the models that take one (masked; the key is never shown)';
  static description = 'Reads GET /api/me/credentials: each model entry with "personal_key" in AGENTSVC_MODELS, whether it requires your key, and yours masked.';
  static examples = ['<%= config.bin %> credentials list', '<%= config.bin %> credentials list --json'];

  async run(): Promise<void> {
    const { items } = await this.api.json<{ items: Credential[] }>('GET', '/api/me/credentials').catch((e) => this.fail(e));
    if (this.flags.json) return this.json({ items });
    if (!items.length) return this.log('no model takes personal keys on this service (AGENTSVC_MODELS entries with "personal_key")');
    for (const c of items) {
      const state = !c.set ? (c.personal_key === 'required' ? 'none: required to use this model' : 'none: the install key is used') : c.readable === false ? `${c.masked} (cannot be decrypted here: set it again)` : `${c.masked} (set ${c.updated_at})`;
      this.log(`${c.model_id}  ${c.personal_key}  ${state}`);
    }
  }
}
