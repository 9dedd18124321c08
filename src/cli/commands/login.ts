import { Flags } from '@oclif/core';
import * as client from 'openid-client';
import { ClientError } from '../terminal/api.js';
import { ClientCommand } from '../terminal/command.js';
import { credentialKey, readCredentials, writeCredentials } from '../terminal/credentials.js';
import { listenLoopback, openBrowser } from '../terminal/loopback.js';

interface DeviceStart {
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  interval: number;
  expires_in: number;
  request_id: string;
}

interface LoopbackStart {
  authorization_url: string;
  state: string;
  expires_in: number;
}

interface SignedIn {
  status: string;
  token?: string;
  username?: string;
  role?: string;
}

type ErrorBody = { detail?: unknown; code?: string };

/** The service's error body, as one line. */
function failure(r: Response, body: ErrorBody): ClientError {
  return new ClientError(
    r.status === 401 || r.status === 403 ? 'auth' : r.status === 404 ? 'not_found' : r.status >= 500 ? 'server' : 'invalid',
    `${typeof body.detail === 'string' ? body.detail : `HTTP ${r.status}`}${body.code ? ` (${body.code})` : ''}`,
    r.status,
    body.code,
  );
}

export default class Login extends ClientCommand<typeof Login> {
  static summary = "Sign in with the service's identity provider (device code, else a browser)";
  static description =
    'Asks the service to start the device authorization grant (RFC 8628) at its OpenID Connect provider, prints the code and the address to approve it at, and waits. ' +
    'When the provider offers no device flow, or with --browser, signs in through a browser instead: listens on http://127.0.0.1:<port>/callback, opens the sign-in page (and prints its URL), and waits for the provider to send the browser back. ' +
    'The sign-in token is stored in ~/.config/agentsvc/credentials.json (mode 0600), used by the client commands when no --key, AGENTSVC_KEY or admin.key is there. See docs/identity.md.';
  static examples = ['<%= config.bin %> login --url https://agents.example.com', '<%= config.bin %> login --browser'];
  static flags = {
    timeout: Flags.integer({ description: 'give up after this many seconds', default: 600 }),
    browser: Flags.boolean({ description: 'sign in through a browser and a loopback redirect, even when the provider offers the device flow' }),
    port: Flags.integer({ description: 'with a browser: the loopback port to listen on (0: any free one; pin one when the provider needs the exact redirect URI registered)', default: 0, min: 0, max: 65535 }),
  };

  private post(path: string, body?: unknown): Promise<Response> {
    const url = this.target.url;
    return fetch(`${url}${path}`, { method: 'POST', headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined }).catch((e) => {
      throw new ClientError('down', `cannot reach ${url}: ${(e as Error).message}`);
    });
  }

  /** The answer's JSON when 2xx, else its error as a ClientError. */
  private async answer<T>(r: Response): Promise<T> {
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw failure(r, body as ErrorBody);
    return body as T;
  }

  async run(): Promise<void> {
    try {
      const device = this.flags.browser ? null : await this.answer<DeviceStart>(await this.post('/api/auth/device')).catch((e) => {
        // The provider's discovery has no device_authorization_endpoint: the browser is the way.
        if (!(e instanceof ClientError && e.code === 'DEVICE_FLOW_UNAVAILABLE')) throw e;
        this.logToStderr('The provider offers no device code: signing in through a browser.');
        return null;
      });
      await (device ? this.device(device) : this.browser());
    } catch (e) {
      this.fail(e);
    }
  }

  /** RFC 8628, run by the service: print the code, poll until the person approved it. */
  private async device(d: DeviceStart): Promise<void> {
    this.logToStderr(`To sign in, open ${d.verification_uri_complete ?? d.verification_uri}\nand confirm the code ${d.user_code}`);
    let interval = Math.max(1, d.interval);
    const until = Date.now() + Math.min(d.expires_in, this.flags.timeout) * 1000;
    while (Date.now() < until) {
      await new Promise((done) => setTimeout(done, interval * 1000));
      const t = await this.answer<SignedIn>(await this.post('/api/auth/device/token', { request_id: d.request_id }));
      if (t.status === 'slow_down') interval += 5;
      if (t.status === 'ok' && t.token) {
        this.signedIn(t);
        return;
      }
    }
    throw new ClientError('auth', 'the code was not confirmed in time; run agentsvc login again');
  }

  /**
   * RFC 8252 7.3: the browser goes to the provider and comes back to our loopback listener with a
   * code. This CLI makes the PKCE verifier (openid-client) and keeps it; the service, which holds
   * the client secret as for the device flow, builds the URL (state, nonce) and exchanges the code.
   */
  private async browser(): Promise<void> {
    const verifier = client.randomPKCECodeVerifier();
    const listener = await listenLoopback(this.flags.port);
    try {
      const start = await this.answer<LoopbackStart>(await this.post('/api/auth/loopback', { redirect_uri: listener.redirectUri, code_challenge: await client.calculatePKCECodeChallenge(verifier) }));
      this.logToStderr(`Opening a browser to sign in. If none opens, open this URL in a browser on this machine:\n${start.authorization_url}`);
      openBrowser(start.authorization_url, (why) => this.logToStderr(`Could not open a browser (${why}): open the URL above yourself.`));
      const seconds = Math.min(this.flags.timeout, start.expires_in);
      const redirect = await listener.next(seconds * 1000);
      if (!redirect) throw new ClientError('auth', `no sign-in came back from the browser within ${seconds} s; run agentsvc login again`);
      const q = redirect.params;
      if (q.get('state') !== start.state) {
        await redirect.answer(400, 'Sign-in failed', 'This answer is not for the sign-in agentsvc login started (wrong state). Nothing was stored; run agentsvc login again.');
        throw new ClientError('auth', 'the browser came back with a wrong state (not the sign-in this login started); nothing stored');
      }
      const given = (k: string) => q.get(k) ?? undefined;
      let t: SignedIn;
      try {
        // A refusal at the provider (error=access_denied) goes to the service too: it forgets the request and audits it.
        const body = { state: start.state, code_verifier: verifier, code: given('code'), iss: given('iss'), error: given('error'), error_description: given('error_description') };
        t = await this.answer<SignedIn>(await this.post('/api/auth/loopback/token', body));
      } catch (e) {
        await redirect.answer(400, 'Sign-in failed', `${(e as Error).message}. Nothing was stored.`);
        throw e;
      }
      const who = this.signedIn(t);
      await redirect.answer(200, 'Signed in', `${who}. You can close this tab.`);
    } finally {
      listener.close();
    }
  }

  /** Stores the token (mode 0600) and says who signed in; answers that sentence. */
  private signedIn(t: SignedIn): string {
    const url = this.target.url;
    if (!t.token) throw new ClientError('server', 'the service answered without a token');
    const all = readCredentials();
    all[credentialKey(url)] = { token: t.token, username: t.username ?? '', created_at: new Date().toISOString() };
    const file = writeCredentials(all);
    const who = `Signed in to ${url} as ${t.username} (${t.role})`;
    if (this.flags.json) this.json({ url, username: t.username, role: t.role, file });
    else this.log(`signed in to ${url} as ${t.username} (${t.role}); credentials in ${file}`);
    return who;
  }
}
