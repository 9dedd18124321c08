import { ApiError } from './api.js';
import type { Ack } from './connection.js';

/**
 * What the console says when the service refuses something: a sentence a person can act on,
 * chosen by the error's stable `code` (docs/errors.md), never the protocol's own wording
 * ("wait for chat:end or send chat:stop"). The service's `detail` is kept where it names the
 * thing (a field, a session), inside a sentence; a code this table does not know shows its
 * detail as a sentence. docs/console.md lists the rule.
 */

/** `detail` as a sentence: capital first letter, closing full stop. */
export function sentence(s: string): string {
  const t = s.trim();
  if (!t) return '';
  const first = t[0].toUpperCase() + t.slice(1);
  return /[.!?…]$/.test(first) ? first : `${first}.`;
}

const bare = (s: string) => sentence(s).replace(/\.$/, '');

const BY_CODE: Record<string, (detail: string) => string> = {
  SESSION_BUSY: () => 'The agent is still working on this session. Your message waits until it finishes; press Esc to stop the run.',
  NOT_FOUND: (d) => `${bare(d || 'not found')}: it may have been deleted, or it belongs to another user.`,
  UNAUTHORIZED: () => 'This API key was not accepted (mistyped, or deleted). Sign in again with a valid key.',
  FORBIDDEN: (d) => `You may not do this${d && d !== 'not allowed' ? ` (${d})` : ''}. Ask an administrator if you need it.`,
  VALIDATION_ERROR: (d) => `Some of what you entered was not accepted${d ? ` (${d})` : ''}. Correct it and try again.`,
  RATE_LIMITED: () => 'Too many requests in the last minute. Wait a moment, then try again.',
  PAYLOAD_TOO_LARGE: () => 'That is over the size limit of the service. Send something smaller.',
  INSUFFICIENT_STORAGE: () => 'The service’s storage is full, so nothing was saved. Free some disk space on the server, then try again.',
  SHUTTING_DOWN: () => 'The service is shutting down or restarting. Try again in a moment.',
  UNAVAILABLE: () => 'The service cannot do this right now. Try again in a moment.',
  TOO_MANY_CONNECTIONS: () => 'Too many open connections for your user. Close other tabs or clients, then reload this page.',
  NETWORK: () => 'The service did not answer. Check that agentsvc is running and reachable, then try again.',
  TIMEOUT: () => 'The service did not answer in time. Check the connection, then try again.',
  INTERNAL: () => 'Something went wrong inside the service. Try again; if it keeps happening, the service log has the details.',
  UNKNOWN_EVENT: () => 'This page and the service do not match (the page is older or newer). Reload the page.',
  LAST_ADMIN: (d) => `${bare(d)}. Make someone else an admin first.`,
  ALREADY_EXISTS: (d) => `${bare(d)}. Choose another name.`,
  NOTHING_TO_COMPACT: () => 'There is nothing to summarise yet in this session.',
  // Run failures (`system:error`).
  MODEL_ERROR: (d) => `The model did not answer${d ? ` (${d})` : ''}. Check the model endpoint in the service’s configuration (agentsvc doctor), then send again.`,
  RUN_FAILED: () => 'The run stopped because of an internal error. Send your message again; if it keeps failing, the service log has the details.',
  RUN_LOST: () => 'The run was cut off (the service restarted). Send your message again to continue.',
  RUNNER_UNAVAILABLE: (d) => `The sandbox that runs tools is not available${d ? ` (${d})` : ''}. Ask the operator to run agentsvc doctor.`,
};

/** The sentence for an error code and the service's detail. */
export function plainError(code: string | undefined, detail: string | undefined): string {
  const d = (detail ?? '').trim();
  const known = code ? BY_CODE[code] : undefined;
  if (known) return known(d);
  if (d) return sentence(d);
  return `The service refused this${code ? ` (${code})` : ''}. Try again, or reload the page.`;
}

/** A thrown error (ApiError from api.ts, or anything else) as a sentence. */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) return plainError(e.code, e.message);
  return plainError(undefined, e instanceof Error ? e.message : String(e));
}

/** A refused Socket.IO acknowledgement as a sentence; null when it succeeded. */
export function ackText(a: Ack): string | null {
  return a.ok ? null : plainError(a.error.code, a.error.message);
}
