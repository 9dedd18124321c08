import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * What `agentsvc login` keeps: a sign-in token per service URL, in
 * `~/.config/agentsvc/credentials.json` (or under XDG_CONFIG_HOME), mode 0600 (docs/identity.md).
 */
export interface Credential {
  token: string;
  username: string;
  created_at: string;
}

export function credentialsFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'agentsvc', 'credentials.json');
}

export function readCredentials(env: NodeJS.ProcessEnv = process.env): Record<string, Credential> {
  try {
    const o = JSON.parse(readFileSync(credentialsFile(env), 'utf8'));
    return o && typeof o === 'object' && !Array.isArray(o) ? o : {};
  } catch {
    return {};
  }
}

/** Written whole to a new file at mode 0600, then renamed over the old: never readable by others, never half written. */
export function writeCredentials(all: Record<string, Credential>, env: NodeJS.ProcessEnv = process.env): string {
  const file = credentialsFile(env);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
  return file;
}

export const credentialKey = (url: string) => url.replace(/\/+$/, '');
