import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { credentialKey, credentialsFile, readCredentials } from './credentials.js';

/**
 * How a client finds the service and its key: flags, then environment, then what `agentsvc up`
 * left in AGENTSVC_HOME (run/url, admin.key), then the defaults of docs/operations.md.
 */

export const DEFAULT_URL = 'http://127.0.0.1:8080';

export function homeDir(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  return flag || env.AGENTSVC_HOME || join(homedir(), '.agentsvc');
}

const urlFile = (home: string) => join(home, 'run', 'url');

function readTrim(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/** What `up` recorded in `home` (null when nothing is recorded). */
export function recordedServiceUrl(home: string): string | null {
  return readTrim(urlFile(home));
}

/** Written by `up` once it listens; a wildcard address is replaced by loopback, which reaches it. */
export function recordServiceUrl(home: string, url: string): void {
  const reachable = url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
  try {
    mkdirSync(join(home, 'run'), { recursive: true, mode: 0o700 });
    writeFileSync(urlFile(home), `${reachable}\n`, { mode: 0o600 });
  } catch {
    // Clients then fall back to --url or the default: not a reason to stop the service.
  }
}

/** Removed on a clean stop, unless another `up` on the same home has written its own since. */
export function forgetServiceUrl(home: string, url: string): void {
  const reachable = url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
  if (readTrim(urlFile(home)) === reachable) rmSync(urlFile(home), { force: true });
}

export interface Target {
  url: string;
  /** Where the URL came from, for error messages. */
  urlFrom: string;
  key: string | null;
  keyFrom: string;
  home: string;
}

/** `fallbackUrl`: where a --config file says the service listens, tried after run/url. */
export function resolveTarget(flags: { url?: string; key?: string; home?: string }, env: NodeJS.ProcessEnv = process.env, fallbackUrl?: string): Target {
  const home = homeDir(flags.home, env);
  let url: string;
  let urlFrom: string;
  const recorded = readTrim(urlFile(home));
  if (flags.url) [url, urlFrom] = [flags.url, '--url'];
  else if (env.AGENTSVC_URL) [url, urlFrom] = [env.AGENTSVC_URL, 'AGENTSVC_URL'];
  else if (recorded) [url, urlFrom] = [recorded, urlFile(home)];
  else if (fallbackUrl) [url, urlFrom] = [fallbackUrl, '--config'];
  else [url, urlFrom] = [DEFAULT_URL, 'default'];
  let key: string | null = null;
  let keyFrom = 'none';
  const keyFile = join(home, 'admin.key');
  if (flags.key) [key, keyFrom] = [flags.key, '--key'];
  else if (env.AGENTSVC_KEY) [key, keyFrom] = [env.AGENTSVC_KEY, 'AGENTSVC_KEY'];
  else {
    const k = readTrim(keyFile);
    if (k) [key, keyFrom] = [k, keyFile];
    else {
      // Last: the sign-in `agentsvc login` stored for this URL (docs/identity.md).
      const c = readCredentials(env)[credentialKey(url)];
      if (c?.token) [key, keyFrom] = [c.token, credentialsFile(env)];
    }
  }
  return { url: url.replace(/\/+$/, ''), urlFrom, key, keyFrom, home };
}
