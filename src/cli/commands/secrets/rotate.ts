import { Flags } from '@oclif/core';
import { BaseCommand } from '../../base.js';
import { keyringOf } from '../../../features/model-keys/module.js';
import { ModelKeys } from '../../../features/model-keys/service.js';
import { AuditStore } from '../../../features/policy/audit-store.js';
import { openDatabase } from '../../../platform/db/index.js';

export default class SecretsRotate extends BaseCommand<typeof SecretsRotate> {
  static summary = 'Re-encrypt every stored personal model key under a new secret key (works whether or not `up` runs)';
  static description = [
    'Without AGENTSVC_SECRET_KEY: a new key is generated into AGENTSVC_HOME/secret.key, every stored key is sealed again under it, then the old keys are removed from the file.',
    'With AGENTSVC_SECRET_KEY: every stored key is sealed again under it; put the old value in AGENTSVC_SECRET_KEY_PREVIOUS first so that what it sealed still opens (docs/model-keys.md).',
  ].join('\n');
  static examples = ['<%= config.bin %> secrets rotate', 'AGENTSVC_SECRET_KEY=$NEW AGENTSVC_SECRET_KEY_PREVIOUS=$OLD <%= config.bin %> secrets rotate --json'];
  static flags = { json: Flags.boolean({ description: 'print JSON' }) };

  async run(): Promise<void> {
    let keyring: ReturnType<typeof keyringOf>;
    try {
      keyring = keyringOf(this.cfg);
    } catch (e) {
      this.fail(e);
    }
    const db = await openDatabase(this.cfg, { migrate: true, poolMax: 2, role: 'cli' }).catch((e) => this.fail(e));
    this.onClose(() => db.close());
    const keys = new ModelKeys({ db, config: this.cfg, keyring, audit: new AuditStore(db), logger: { error: () => {}, warn: () => {}, info: () => {} } });
    const r = await keys.rotate('secrets rotate').catch((e) => this.fail(e));
    if (this.flags.json) return this.log(JSON.stringify(r, null, 2));
    this.log(`${r.resealed} stored key(s) sealed again under key ${r.key_id}${r.retired.length ? `; removed old key(s) ${r.retired.join(', ')} from secret.key` : ''}`);
    if (r.unreadable) this.logToStderr(`agentsvc: ${r.unreadable} stored key(s) could not be decrypted with any key this install has and were left as they are; their users must set them again`);
  }
}
