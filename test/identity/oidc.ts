import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { build, type TestApp } from '../helpers/app.js';
import { deadline } from '../helpers/wait.js';

type T = Parameters<typeof build>[0];

export const CLIENT_SECRET = 'test-client-secret-0123456789';

export interface TestProvider {
  issuer: string;
  /** Move the provider's clock (seconds; 0 puts it back). */
  skew(seconds: number): Promise<void>;
}

/** The device flow is offered unless `deviceFlow: false`; `loopback`: `http://127.0.0.1/callback` at any port is a redirect URI too. */
export interface ProviderOptions {
  deviceFlow?: boolean;
  loopback?: boolean;
}

/** Starts test/identity/provider.mjs (oidc-provider on loopback); `setup` names the relying party's URLs. */
export async function startProvider(t: T): Promise<TestProvider & { setup(serviceUrl: string, opts?: ProviderOptions): Promise<void> }> {
  const child: ChildProcess = spawn(process.execPath, [fileURLToPath(new URL('./provider.mjs', import.meta.url))], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => child.kill('SIGTERM'));
  let out = '';
  child.stdout?.setEncoding('utf8');
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (d: string) => {
      out += d;
      const m = /provider listening (\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    once(child, 'exit').then(() => reject(new Error(`the test provider exited: ${out}`)));
  });
  const issuer = await deadline(listening, 30_000, 'the test OpenID provider to listen');
  return {
    issuer,
    setup: async (serviceUrl, opts = {}) => {
      const q = new URLSearchParams({
        redirect_uri: `${serviceUrl}/api/auth/oidc/callback`,
        after_logout: `${serviceUrl}/`,
        device: opts.deviceFlow === false ? 'off' : 'on',
        loopback: opts.loopback ? 'on' : 'off',
      });
      const r = await fetch(`${issuer}/__setup?${q}`);
      if (!r.ok) throw new Error('provider setup failed');
    },
    skew: async (seconds) => {
      await fetch(`${issuer}/__skew?seconds=${seconds}`);
    },
  };
}

/** The service's settings for the test provider (docs/identity.md). */
export const oidcEnv = (issuer: string): Record<string, string> => ({
  AGENTSVC_OIDC_ISSUER: issuer,
  AGENTSVC_OIDC_CLIENT_ID: 'agentsvc',
  AGENTSVC_OIDC_CLIENT_SECRET: CLIENT_SECRET,
  AGENTSVC_OIDC_NAME: 'Test IdP',
  AGENTSVC_OIDC_ROLES: '{"claim": "groups", "admin": ["agentsvc-admins"], "member": ["staff"], "viewer": ["readers"]}',
});

/** The test provider and the service as its relying party. */
export async function withProvider(t: T, env: Record<string, string> = {}): Promise<{ app: TestApp; provider: TestProvider }> {
  const provider = await startProvider(t);
  const app = await build(t, { ...oidcEnv(provider.issuer), ...env });
  await provider.setup(app.url);
  return { app, provider };
}

/** A cookie jar across the provider and the service (both on 127.0.0.1: browsers share cookies across ports too). */
export class Jar {
  cookies = new Map<string, string>();
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  take(r: Response) {
    for (const c of r.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (!value || /max-age=0/i.test(c) || /expires=Thu, 01 Jan 1970/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  async fetch(url: string, init: RequestInit = {}) {
    const headers = new Headers(init.headers);
    if (this.cookies.size) headers.set('cookie', this.header());
    const r = await fetch(url, { ...init, headers, redirect: 'manual' });
    this.take(r);
    return r;
  }
}

/**
 * The provider's side of a sign-in, as a browser does it: from the service's login route through the
 * provider's login and consent forms, up to the redirect back. Answers the callback URL, not yet opened.
 */
export async function throughProvider(app: Pick<TestApp, 'url'>, jar: Jar, login: string, start = '/api/auth/oidc/login'): Promise<string> {
  let r = await jar.fetch(app.url + start);
  for (let i = 0; i < 20; i++) {
    const location = r.headers.get('location');
    if (location) {
      const next = new URL(location, r.url || app.url).href;
      if (next.startsWith(`${app.url}/api/auth/oidc/callback`)) return next;
      r = await jar.fetch(next);
      continue;
    }
    const html = await r.text();
    const form = /<form[^>]*action="([^"]+)"[^>]*method="post"/.exec(html);
    if (!form) throw new Error(`no form at ${r.url} (${r.status}): ${html.slice(0, 300)}`);
    const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1] ?? 'consent';
    const body = new URLSearchParams(prompt === 'login' ? { prompt, login, password: 'x' } : { prompt });
    r = await jar.fetch(new URL(form[1], r.url).href, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }
  throw new Error('the sign-in did not come back to the service');
}

/** A whole sign-in: answers the service's cookie jar, signed in as `login`. */
export async function signIn(app: Pick<TestApp, 'url'>, login: string): Promise<Jar> {
  const jar = new Jar();
  const callback = await throughProvider(app, jar, login);
  const r = await jar.fetch(callback);
  if (r.status !== 302 || !jar.cookies.has('agentsvc_signin')) throw new Error(`sign-in of ${login} failed: ${r.status} ${await r.text()}`);
  return jar;
}

/** Approves a device code as the person would: the provider's pages from the verification URL on, to its success page. */
export async function approveDevice(jar: Jar, url: string, login: string): Promise<string> {
  let r = await jar.fetch(url);
  for (let i = 0; i < 20; i++) {
    const location = r.headers.get('location');
    if (location) {
      r = await jar.fetch(new URL(location, r.url).href);
      continue;
    }
    const html = await r.text();
    const form = /<form([^>]*)>/.exec(html);
    if (!form) return html;
    const action = /action="([^"]*)"/.exec(form[1])?.[1] ?? r.url;
    const body = new URLSearchParams();
    for (const m of html.matchAll(/<input[^>]*type="hidden"[^>]*>/g)) {
      const name = /name="([^"]+)"/.exec(m[0])?.[1];
      if (name) body.set(name, /value="([^"]*)"/.exec(m[0])?.[1] ?? '');
    }
    if (/name="login"/.test(html)) {
      body.set('login', login);
      body.set('password', 'x');
    }
    r = await jar.fetch(new URL(action.replace(/&amp;/g, '&'), r.url).href, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }
  throw new Error('the device approval did not end');
}
