import type { Subscriptions } from '../../core/events/subscriptions.js';
import type { SessionService } from '../../core/sessions/service.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import { AppError } from '../../platform/server/errors.js';
import { ACCESS, accessChange, type UserService } from '../users/service.js';

export interface ReadAccessDeps {
  users: Pick<UserService, 'announceAccess' | 'onRevoked'>;
  /** The subscriptions of this node's sockets (the chat module's). */
  subs: Pick<Subscriptions, 'recheck'>;
  sessions: Pick<SessionService, 'getReadable'>;
  logger: Logger;
}

/**
 * A subscription lasts only as long as its user may read the session (docs/identity.md, "When read
 * access goes"). Subscribing checks once (`session:subscribe`); what takes read access away is
 * announced on every node (the users' revocation channel, `ACCESS`) and each node checks again the
 * subscriptions it names with the same `getReadable`: one refused now ends with `session:closed`.
 * Team workspaces take access away (a member leaves or is removed, a workspace is deleted), and so
 * does a session's deletion, announced from here too since this is where subscriptions are checked.
 */
export function readAccess(d: ReadAccessDeps) {
  const announce = async (changes: string[]) => {
    // The change itself is committed: a failed announcement is logged, not the caller's error.
    await d.users.announceAccess(changes).catch((e) => d.logger.error({ ...errField(e), changes: changes.length }, 'read access change not announced'));
  };
  /** What a subscribe would be refused with now, or null while the session is readable. */
  const refusal = async (userId: string, sessionId: string) => {
    try {
      await d.sessions.getReadable(userId, sessionId);
      return null;
    } catch (e) {
      if (e instanceof AppError) return { code: e.code, message: typeof e.detail === 'string' ? e.detail : JSON.stringify(e.detail) };
      // Not a refusal (the database did not answer): the subscription stays.
      d.logger.warn({ ...errField(e), user_id: userId, session_id: sessionId }, 'read access not checked again');
      return null;
    }
  };
  return {
    /** These users may read less than before. */
    shrank: (userIds: string[]) => announce(userIds.map(ACCESS.user)),
    /** The session is gone (the `session.deleted` hook). */
    deleted: (sessionId: string) => announce([ACCESS.session(sessionId)]),
    /** Check subscriptions again on every announcement this node hears; answers the function that stops it. */
    watch: () =>
      d.users.onRevoked((what) => {
        const which = accessChange(what);
        if (which) void d.subs.recheck(which, refusal).catch((e) => d.logger.error({ ...errField(e), what }, 'subscriptions not checked again'));
      }),
  };
}
