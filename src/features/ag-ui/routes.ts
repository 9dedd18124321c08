import { EventEncoder } from '@ag-ui/encoder';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { me } from '../../platform/server/auth.js';
import { AppError } from '../../platform/server/errors.js';
import { errField, type Logger } from '../../platform/lib/logger.js';
import { text } from '../../platform/lib/storable.js';
import { SessionParams } from '../../core/sessions/schemas.js';
import type { Conversation } from '../../core/conversation/conversation.js';
import type { DoorInput, DoorRuns } from '../doors/follow.js';
import { pendingOf } from '../doors/pending.js';
import { AgUiRun } from './mapping.js';

export interface AgUiDeps {
  doors: DoorRuns;
  conversation: Conversation;
  logger: Logger;
  /** What one answer may have pending, not yet taken by its client (AGENTSVC_SOCKET_BUFFER_BYTES). */
  pendingBytes: number;
}

/**
 * The part of AG-UI's RunAgentInput the door reads; the rest (tools, context, state,
 * forwardedProps) is accepted and not carried (docs/protocol-doors.md says why).
 */
const Message = z.looseObject({ id: text(200).optional(), role: text(50), content: z.unknown().optional() });
const Resume = z.looseObject({ interruptId: text(200, 1), status: z.enum(['resolved', 'cancelled']), payload: z.unknown().optional() });
const RunAgentInput = z.looseObject({
  threadId: text(200, 1),
  runId: text(200, 1),
  messages: z.array(Message).max(10_000),
  resume: z.array(Resume).max(100).optional(),
});
type Input = z.output<typeof RunAgentInput>;

const invalid = (field: string, msg: string) => new AppError(422, 'VALIDATION_ERROR', [{ loc: ['body', field], msg, type: 'value_error' }]);

/** The user message's text: a string, or its text parts joined. */
function userText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .filter((p): p is { type: 'text'; text: string } => !!p && typeof p === 'object' && p.type === 'text' && typeof p.text === 'string')
      .map((p) => p.text)
      .join('\n');
  }
  return '';
}

/** The chat:send an AG-UI run means: the last user message, or the answer an interrupt's resume gives. */
async function toSend(sessionId: string, body: Input, conversation: Conversation): Promise<DoorInput> {
  const resume = body.resume ?? [];
  if (resume.length > 1) throw invalid('resume', 'one interrupt is open at a time: resume it alone');
  if (resume.length === 1) {
    const r = resume[0];
    const payload = (r.payload ?? {}) as { selections?: unknown; custom?: unknown };
    if (r.status === 'cancelled') {
      const turns = await conversation.turns(sessionId);
      const pending = turns.flatMap((t) => pendingOf(t)).find((p) => p.tool_call_id === r.interruptId);
      // A cancelled approval is a Deny; a question has no answer that means "cancelled".
      if (pending?.type !== 'approval') throw invalid('resume', 'only an approval can be cancelled (it is denied); answer a question with selections or custom');
      return { session_id: sessionId, message: '', askuser_answer: { tool_call_id: r.interruptId, selections: { 0: [2] }, custom: {} } };
    }
    return {
      session_id: sessionId,
      message: '',
      askuser_answer: { tool_call_id: r.interruptId, selections: (payload.selections ?? {}) as Record<string, number[]>, custom: (payload.custom ?? {}) as Record<string, string> },
    };
  }
  const last = body.messages.at(-1);
  if (last?.role !== 'user') throw invalid('messages', "the last message must be the user's new message (the session keeps the conversation before it)");
  const message = userText(last.content);
  if (!message.trim()) throw invalid('messages', 'the user message has no text');
  return { session_id: sessionId, message };
}

/**
 * `POST /api/ag-ui/{session_id}`: a run of the session as an AG-UI event stream (server-sent
 * events). Everything that refuses a chat:send refuses it before the stream starts, as the REST
 * error body with its status (404, 409 SESSION_BUSY, 422, 429). Once it streams, the run goes to
 * its chat:end; a client that closes the stream before that stops the run (chat:stop). A client
 * that stops reading has its answer cut once more than `pendingBytes` wait for it (the memory it
 * holds stays bounded); the run goes on, readable through the other doors.
 */
export const agUiRoutes: FastifyPluginAsyncZod<AgUiDeps> = async (app, deps) => {
  app.post(
    '/api/ag-ui/:session_id',
    {
      schema: {
        tags: ['ag-ui'],
        summary: 'Run the session as an AG-UI agent',
        description: 'Takes an AG-UI RunAgentInput; answers the run as AG-UI events (text/event-stream): docs/protocol-doors.md.',
        params: SessionParams,
        body: RunAgentInput,
        // The answer is a text/event-stream of AG-UI events, written by the handler itself.
        response: { 200: z.string().describe('AG-UI events as server-sent events (text/event-stream)') },
      },
    },
    async (req, reply) => {
      const userId = me(req).id;
      const sessionId = req.params.session_id;
      const input = await toSend(sessionId, req.body, deps.conversation);
      const run = new AgUiRun(req.body.threadId, req.body.runId);
      const encoder = new EventEncoder();
      const gone = new AbortController();
      const queued: string[] = [];
      let streaming = false;
      let cut!: () => void;
      const wasCut = new Promise<void>((resolve) => (cut = resolve));
      let slow = false;
      const write = (chunk: string) => {
        if (slow) return;
        if (!streaming) return void queued.push(chunk);
        reply.raw.write(chunk);
        if (reply.raw.writableLength <= deps.pendingBytes) return;
        slow = true;
        deps.logger.warn(
          { user_id: userId, session_id: sessionId, pending_bytes: reply.raw.writableLength },
          'an AG-UI client stopped reading its stream; ended it (AGENTSVC_SOCKET_BUFFER_BYTES)',
        );
        reply.raw.destroy();
        cut();
      };
      const followed = await deps.doors.start(
        userId,
        input,
        (ev) => {
          for (const e of run.map(ev)) write(encoder.encodeSSE(e));
        },
        gone.signal,
      );
      // Refusals threw above, as an ordinary error answer; from here on the answer is the stream.
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': encoder.getContentType(), 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
      reply.raw.write(
        run
          .started()
          .map((e) => encoder.encodeSSE(e))
          .join(''),
      );
      streaming = true;
      for (const chunk of queued.splice(0)) write(chunk);
      // The client went away: the run stops. Cut for not reading: the run goes on.
      const closed = () => void (slow ? undefined : gone.abort());
      reply.raw.on('close', closed);
      try {
        await Promise.race([followed.ended, wasCut]);
      } catch (e) {
        deps.logger.error({ ...errField(e), session_id: sessionId }, 'ag-ui stream failed');
      } finally {
        reply.raw.off('close', closed);
        reply.raw.end();
      }
    },
  );
};
