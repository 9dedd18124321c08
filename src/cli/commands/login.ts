import { Flags } from '@oclif/core';
import { ClientError } from '../terminal/api.js';
import { ClientCommand } from '../terminal/command.js';
import { credentialKey, readCredentials, writeCredentials } from '../terminal/credentials.js';

interface DeviceStart {
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  interval: number;
  expires_in: number;
  request_id: string;
}

/** The service's error body, as one line. */
async function failure(r: Response): Promise<ClientError> {
  const body = (await r.json().catch(() => ({}))) as { detail?: unknown; code?: string };
  return new ClientError(r.status === 401 || r.status === 403 ? 'auth' : r.status === 404 ? 'not_found' : r.status >= 500 ? 'server' : 'invalid', `${typeof body.detail === 'string' ? body.detail : `HTTP ${r.status}`}${body.code ? ` (${body.code})` : ''}`);
}

export default class Login extends ClientCommand<typeof Login> {
  static summary = "Sign in with the service's identity provider (device code)";
  static description =
    'Asks the service to start the device authorization grant (RFC 8628) at its OpenID Connect provider, prints the code and the address to approve it at, and waits. The sign-in token is stored in ~/.config/agentsvc/credentials.json (mode 0600), used by the client commands when no --key, AGENTSVC_KEY or admin.key is there. See docs/identity.md.';
  static examples = ['<%= config.bin %> login --url https://agents.example.com'];
  static flags = { timeout: Flags.integer({ description: 'give up after this many seconds', default: 600 }) };

  async run(): Promise<void> {
    const url = this.target.url;
    const post = (path: string, body?: unknown) =>
      fetch(`${url}${path}`, { method: 'POST', headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined }).catch((e) => {
        throw new ClientError('down', `cannot reach ${url}: ${(e as Error).message}`);
      });
    try {
      const r = await post('/api/auth/device');
      if (!r.ok) throw await failure(r);
      const d = (await r.json()) as DeviceStart;
      this.logToStderr(`To sign in, open ${d.verification_uri_complete ?? d.verification_uri}\nand confirm the code ${d.user_code}`);
      let interval = Math.max(1, d.interval);
      const until = Date.now() + Math.min(d.expires_in, this.flags.timeout) * 1000;
      while (Date.now() < until) {
        await new Promise((done) => setTimeout(done, interval * 1000));
        const p = await post('/api/auth/device/token', { request_id: d.request_id });
        if (!p.ok) throw await failure(p);
        const t = (await p.json()) as { status: string; token?: string; username?: string; role?: string };
        if (t.status === 'slow_down') interval += 5;
        if (t.status !== 'ok' || !t.token) continue;
        const all = readCredentials();
        all[credentialKey(url)] = { token: t.token, username: t.username ?? '', created_at: new Date().toISOString() };
        const file = writeCredentials(all);
        if (this.flags.json) return this.json({ url, username: t.username, role: t.role, file });
        this.log(`signed in to ${url} as ${t.username} (${t.role}); credentials in ${file}`);
        return;
      }
      throw new ClientError('auth', 'the code was not confirmed in time; run agentsvc login again');
    } catch (e) {
      this.fail(e);
    }
  }
}
