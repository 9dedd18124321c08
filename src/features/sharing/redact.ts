import type { SessionService } from '../../core/sessions/service.js';
import type { EnvBucketStore } from '../user-settings/store.js';

/** Where a session's secrets are read: its env (sessions) and its owner's `default` bucket (settings). */
export interface SecretSources {
  sessions: Pick<SessionService, 'envOf'>;
  buckets: Pick<EnvBucketStore, 'get'>;
}

/** What a secret becomes in a share or an export. */
export const MASK = '****';
/** Shorter values (flags, ports, `yes`) would mask ordinary words all over a conversation. */
const MIN_SECRET = 4;
/** A line of a multi-line secret (a PEM body line) is masked on its own from this length. */
const MIN_LINE = 16;
/** JSON-looking strings up to this size are decoded, masked and encoded again. */
const MAX_JSON_STRING = 4 * 1024 * 1024;

/**
 * The strings to mask, longest first: each secret as it is, as it reads inside a JSON string (tool
 * arguments are JSON text: a PEM's newlines are `\n` there, a quote `\"`), and each long line of a
 * multi-line secret (`echo $KEY` without quotes joins the lines with spaces).
 */
function needles(secrets: string[]): string[] {
  const out = new Set<string>();
  for (const v of secrets) {
    if (v.length < MIN_SECRET) continue;
    out.add(v);
    out.add(JSON.stringify(v).slice(1, -1));
    if (!v.includes('\n')) continue;
    for (const line of v.split(/\r?\n/)) {
      const l = line.trim();
      if (l.length >= MIN_LINE && !/^-----(BEGIN|END) [A-Z0-9 ]+-----$/.test(l)) out.add(l);
    }
  }
  return [...out].sort((a, b) => b.length - a.length);
}

/**
 * Masks secrets in values, before anything is serialised (docs/sharing-and-portability.md): every string of the value,
 * object keys included, is searched as it is. A string holding JSON (a tool call's arguments) is
 * also decoded and its strings searched, so no escape the writer chose (`\u0022`, `\/`) hides a
 * secret. Masking the serialised text instead missed every secret holding a newline, `"` or `\`,
 * which JSON escapes. Dates and buffers pass as they are.
 */
export function redactor(secrets: string[]): <T>(value: T) => T {
  const list = needles(secrets);
  const plain = (s: string) => list.reduce((acc, n) => (acc.includes(n) ? acc.split(n).join(MASK) : acc), s);
  const str = (s: string): string => {
    const t = s.trimStart();
    if ((t.startsWith('{') || t.startsWith('[')) && s.length <= MAX_JSON_STRING) {
      try {
        const parsed: unknown = JSON.parse(s);
        const masked = walk(parsed);
        return plain(JSON.stringify(masked) === JSON.stringify(parsed) ? s : JSON.stringify(masked));
      } catch {
        // Not JSON after all: searched as text.
      }
    }
    return plain(s);
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return str(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object' && !(v instanceof Date) && !ArrayBuffer.isView(v)) {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [plain(k), walk(x)]));
    }
    return v;
  };
  return <T>(value: T) => (list.length ? (walk(value) as T) : value);
}

/** The values a session's runs see that its owner did not write into the conversation: its env and the owner's `default` env bucket. */
export async function sessionSecrets(from: SecretSources, sessionId: string): Promise<string[]> {
  const s = await from.sessions.envOf(sessionId);
  if (!s) return [];
  const bucket = await from.buckets.get(s.user_id, 'default');
  return [...Object.values(s.env ?? {}), ...Object.values(bucket?.env ?? {})];
}
