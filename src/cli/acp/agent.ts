import * as acp from '@agentclientprotocol/sdk';
import type { Api } from '../terminal/api.js';
import { type ChatEnd, ChatSession, type Pending, titleFrom } from '../terminal/chat.js';
import { type Answer, parseQuestions } from '../terminal/question.js';
import type { ServerEvent } from '../terminal/stream.js';
import {
  approvalNote,
  approvalOptions,
  callStatus,
  historyUpdates,
  type Message,
  messageText,
  parseArgs,
  planEntries,
  promptMessage,
  questionOptions,
  questionTitle,
  stopReason,
  textContent,
  toolCallUpdate,
  toolKind,
  toolTitle,
  typedAnswer,
} from './mapping.js';
import { requestError } from './errors.js';

/**
 * `agentsvc acp`: an Agent Client Protocol agent over stdio that is one more client of a running
 * service, like `agentsvc chat` (the same REST and Socket.IO interface, the same key). Each ACP
 * session is an agentsvc session; a prompt is a `chat:send` whose events stream back as
 * `session/update` notifications; questions and approvals are asked with
 * `session/request_permission` and answered back to the service. Nothing but protocol frames is
 * written to stdout. The mapping, and what ACP does not carry: docs/acp.md.
 */

export interface AcpAgentOptions {
  api: Api;
  version: string;
  /** One line for stderr. */
  log: (line: string) => void;
}

type Mode = 'executing' | 'planning';

const MODES: acp.SessionModeState['availableModes'] = [
  { id: 'executing', name: 'Executing', description: 'The agent uses its tools in the session workspace' },
  { id: 'planning', name: 'Planning', description: 'No tools run: the answer is a plan' },
];

/** Tools whose result changes the session's task list: the plan is sent again after them. */
const PLAN_TOOLS = new Set(['TaskCreate', 'TaskUpdate']);

class AcpSession {
  chat!: ChatSession;
  mode: Mode = 'executing';
  /** A session/prompt is being answered. */
  prompting = false;
  /** session/cancel came for the current prompt. */
  cancelled = false;
  titled = false;
  /** The permission request in flight, aborted by session/cancel. */
  permission: AbortController | null = null;
  /** The run's last system:error, for a failed prompt's error. */
  lastError: { code: string; message: string } | null = null;
  /** Live events held while session/load replays the stored conversation. */
  held: ServerEvent[] | null = null;
  private parents = new Map<string, string | null>();
  private roles = new Map<string, string>();
  private tools = new Map<string, string>();
  private queue: Promise<void> = Promise.resolve();

  constructor(
    readonly id: string,
    private readonly client: acp.AgentContext,
    private readonly api: Api,
    private readonly log: (line: string) => void,
  ) {}

  /** Notifications go out one after another, in the order of the events they come from. */
  update(update: acp.SessionUpdate | (() => Promise<acp.SessionUpdate | null>)) {
    this.queue = this.queue
      .then(async () => {
        const u = typeof update === 'function' ? await update() : update;
        if (u) await this.client.notify(acp.methods.client.session.update, { sessionId: this.id, update: u });
      })
      .catch((e) => this.log(`session/update not sent: ${(e as Error).message}`));
  }

  /** Resolves once every update queued so far has been written. */
  flush() {
    return this.queue;
  }

  onEvent = (e: ServerEvent) => {
    if (this.held) {
      this.held.push(e);
      return;
    }
    this.map(e);
  };

  release() {
    const held = this.held ?? [];
    this.held = null;
    for (const e of held) this.map(e);
  }

  private map(e: ServerEvent) {
    switch (e.name) {
      case 'chat:start':
        // A cancel that came before the run started: stop it now that it runs.
        if (this.prompting && this.cancelled) void this.chat.stop().catch((err) => this.log((err as Error).message));
        return;
      case 'system:error':
        this.lastError = { code: e.payload.code, message: e.payload.message };
        return;
      case 'session:resync':
        this.log(`session ${this.id}: events were missed (resync at seq ${e.payload.seq}); load the session again to see all of it`);
        return;
      case 'session:closed':
        // Deleted, or no longer readable by this user: a prompt under way fails with this (ChatSession ends its wait).
        this.lastError = { code: e.payload.code, message: `the session is no longer readable (${e.payload.message})` };
        this.log(`session ${this.id}: the service ended its subscription: ${e.payload.code} ${e.payload.message}`);
        return;
      case 'turn:start':
        this.parents.set(e.payload.turn_id, e.payload.parent_fork_tool_call_id);
        this.roles.set(e.payload.turn_id, e.payload.role);
        return;
      case 'turn:end': {
        // A message sent through another door (the console, `agentsvc chat`) shows as the user's.
        const t = e.payload.turn;
        if (!this.prompting && t.role === 'user' && !t.parent_fork_tool_call_id) {
          const text = t.blocks.filter((b) => b.type === 'text').map((b) => b.content).join('');
          if (text) this.update({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text } });
        }
        return;
      }
      case 'turn:patch':
        return this.patch(e.payload);
      default:
        return;
    }
  }

  private patch(p: Extract<ServerEvent, { name: 'turn:patch' }>['payload']) {
    const parent = this.parents.get(p.turn_id) ?? null;
    switch (p.patch_type) {
      case 'add_content':
      case 'add_thinking':
        // A sub-agent's text is its own work, not the answer: its result shows under its Agent call.
        if (parent || this.roles.get(p.turn_id) === 'user' || !p.data.text_delta) return;
        this.update({ sessionUpdate: p.patch_type === 'add_content' ? 'agent_message_chunk' : 'agent_thought_chunk', content: { type: 'text', text: p.data.text_delta } });
        return;
      case 'add_tool_call':
        this.tools.set(p.data.id, p.data.tool_name);
        this.update(toolCallUpdate(p.data, parent));
        return;
      case 'update_tool_call':
        this.update({ sessionUpdate: 'tool_call_update', toolCallId: p.data.id, status: 'in_progress', ...(p.data.progress ? { content: textContent(p.data.progress) } : {}) });
        return;
      case 'tool_result': {
        const d = p.data;
        this.update({ sessionUpdate: 'tool_call_update', toolCallId: d.tool_call_id, status: callStatus(d.status), content: textContent(d.status === 'cancelled' && !d.result ? 'cancelled' : d.result), rawOutput: d.result });
        if (d.status === 'done' && PLAN_TOOLS.has(this.tools.get(d.tool_call_id) ?? '')) this.update(() => this.plan());
        return;
      }
      default:
        return;
    }
  }

  /** The session's task list, read when a task tool has changed it (the whole plan each time). */
  private async plan(): Promise<acp.SessionUpdate | null> {
    const tasks = await this.api.json<{ subject: string; status: string }[]>('GET', `/api/sessions/${encodeURIComponent(this.id)}/tasks`).catch((e) => {
      this.log(`the task list of ${this.id} could not be read: ${(e as Error).message}`);
      return null;
    });
    return tasks ? { sessionUpdate: 'plan', entries: planEntries(tasks) } : null;
  }

  /**
   * Ask the editor what the service waits on. An approval is one permission request (Allow once,
   * Allow for this session, Deny); a question is one request per question, its choices as the
   * options. Null when the editor cancelled; 'typed' when a question has no choices to pick (the
   * next prompt's text is then its answer).
   */
  async ask(p: Pending): Promise<Answer | null | 'typed'> {
    const ac = new AbortController();
    this.permission = ac;
    const request = (toolCall: acp.ToolCallUpdate, options: acp.PermissionOption[]) =>
      this.client.request(acp.methods.client.session.requestPermission, { sessionId: this.id, toolCall, options }, { cancellationSignal: ac.signal, stopWaitingOnCancel: true });
    const picked = (r: acp.RequestPermissionResponse, count: number): number | null => {
      if (r.outcome.outcome !== 'selected') return null;
      const i = Number(r.outcome.optionId);
      if (Number.isInteger(i) && i >= 0 && i < count) return i;
      this.log(`session/request_permission answered an unknown option ${JSON.stringify(r.outcome.optionId)}: taken as cancelled`);
      return null;
    };
    try {
      if (p.approval) {
        const a = p.approval;
        const args = typeof a.arguments === 'string' ? a.arguments : JSON.stringify(a.arguments ?? {});
        const options = approvalOptions(a);
        const r = await request({ toolCallId: p.toolCallId, title: toolTitle(a.tool_name, a.tool_name, args), kind: toolKind(a.tool_name), status: 'pending', rawInput: parseArgs(args), content: textContent(approvalNote(a)) }, options);
        const i = picked(r, options.length);
        return i === null ? null : { tool_call_id: p.toolCallId, selections: { 0: [i] }, custom: {} };
      }
      const questions = parseQuestions(p.arguments);
      if (!questions.length || questions.some((q) => !q.options?.length)) return 'typed';
      const answer: Answer = { tool_call_id: p.toolCallId, selections: {}, custom: {} };
      for (const [n, q] of questions.entries()) {
        const options = questionOptions(q);
        const r = await request({ toolCallId: p.toolCallId, title: questionTitle(q), kind: 'other', status: 'pending', rawInput: q }, options);
        const i = picked(r, options.length);
        if (i === null) return null;
        answer.selections[String(n)] = [i];
      }
      return answer;
    } catch (e) {
      if (ac.signal.aborted) return null;
      throw e;
    } finally {
      this.permission = null;
    }
  }

  /** Send a message or an answer; the run's chat:end once every update it caused has been written. */
  async send(message: Message, answer?: Answer): Promise<ChatEnd> {
    // ChatSession types a message as text; the service takes the parts of an image prompt as well.
    const end = await this.chat.send(message as string, answer, answer ? undefined : this.mode);
    await this.flush();
    return end;
  }

  /** One ACP prompt turn: the message, then every question and approval the run stops on, answered. */
  async prompt(prompt: acp.ContentBlock[]): Promise<acp.PromptResponse> {
    const message = promptMessage(prompt);
    const text = messageText(message);
    if (!this.titled && text.trim()) {
      this.titled = true;
      const title = titleFrom(text);
      await this.api.json('PATCH', `/api/sessions/${encodeURIComponent(this.id)}`, { intent: title }).catch((e) => this.log(`no title: ${(e as Error).message}`));
      this.update({ sessionUpdate: 'session_info_update', title });
    }
    let queued: Message | null = message;
    let answer: Answer | null = null;
    const waiting = this.chat.pending;
    if (waiting && !waiting.approval) {
      // The session waits on a question: what the person typed is its answer.
      answer = typedAnswer(waiting.toolCallId, parseQuestions(waiting.arguments), text);
      queued = null;
    } else if (waiting) {
      // It waits on an approval: ask it first, then send the message once that run has ended.
      const a = await this.ask(waiting);
      if (a === null || a === 'typed') return { stopReason: 'cancelled' };
      answer = a;
    }
    for (;;) {
      let end: ChatEnd;
      if (answer) {
        end = await this.send('', answer);
        answer = null;
      } else {
        end = await this.send(queued ?? '');
        queued = null;
      }
      if (this.cancelled) return { stopReason: 'cancelled' };
      const paused = end.status === 'completed' && (end.finish_reason === 'tool_question' || end.finish_reason === 'tool_approval');
      // The next approval of the same turn was announced in an earlier run: read it from the session.
      if (paused && !this.chat.pending) this.chat.pendingFrom(await this.api.messages(this.id));
      if (paused && this.chat.pending) {
        const a = await this.ask(this.chat.pending);
        if (a === null) return { stopReason: 'cancelled' };
        if (a === 'typed') return { stopReason: 'end_turn' };
        answer = a;
        continue;
      }
      if (queued !== null && end.status === 'completed') continue;
      const reason = stopReason(end);
      if (reason) return { stopReason: reason };
      const err = this.lastError;
      throw new acp.RequestError(-32603, err ? `the run failed: ${err.message}` : 'the run failed', { code: err?.code ?? 'RUN_FAILED', finish_reason: end.finish_reason });
    }
  }

  cancel() {
    this.cancelled = true;
    this.permission?.abort();
    if (this.chat.running) void this.chat.stop().catch((e) => this.log((e as Error).message));
  }

  close() {
    this.chat?.close();
  }
}

/** The ACP agent on `stream`; resolves when the editor closes the connection. */
export function serveAcp(o: AcpAgentOptions, stream: acp.Stream): acp.AgentConnection {
  const sessions = new Map<string, AcpSession>();
  let connection: acp.AgentConnection | null = null;
  const known = (id: string) => {
    const s = sessions.get(id);
    if (!s) throw new acp.RequestError(-32002, `session ${id} is not open on this connection: create it (session/new) or load it (session/load) first`, { sessionId: id });
    return s;
  };
  const modes = (s: AcpSession): acp.SessionModeState => ({ currentModeId: s.mode, availableModes: MODES });

  /** An agentsvc session of the caller's, its event stream open (404: session not found). */
  async function open(id: string, hold: boolean): Promise<AcpSession> {
    sessions.get(id)?.close();
    sessions.delete(id);
    const s = new AcpSession(id, connection!.client, o.api, o.log);
    if (hold) s.held = [];
    s.chat = await ChatSession.open(o.api, id, s.onEvent);
    sessions.set(id, s);
    return s;
  }

  const app = acp
    .agent({ name: 'agentsvc' })
    .onRequest(acp.methods.agent.initialize, () => ({
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { image: true, audio: false, embeddedContext: true },
        mcpCapabilities: { http: false, sse: false },
      },
      agentInfo: { name: 'agentsvc', title: 'agentsvc', version: o.version },
      authMethods: [],
    }))
    .onRequest(acp.methods.agent.session.new, async () => {
      try {
        // The editor's cwd and MCP servers are not used: the agent works in the session's own
        // workspace on the service, with the service's tools (docs/acp.md).
        const { session_id } = await o.api.createSession({});
        const s = await open(session_id, false);
        return { sessionId: session_id, modes: modes(s) };
      } catch (e) {
        throw requestError(e);
      }
    })
    .onRequest(acp.methods.agent.session.load, async ({ params }) => {
      const id = params.sessionId;
      try {
        const info = await o.api.session(id);
        const s = await open(id, true);
        s.titled = Boolean(info.intent);
        const turns = await o.api.messages(id);
        s.chat.pendingFrom(turns);
        for (const u of historyUpdates(turns)) s.update(u);
        s.release();
        await s.flush();
        return { modes: modes(s) };
      } catch (e) {
        sessions.get(id)?.close();
        sessions.delete(id);
        throw requestError(e, id);
      }
    })
    .onRequest(acp.methods.agent.session.setMode, ({ params }) => {
      const s = known(params.sessionId);
      if (params.modeId !== 'executing' && params.modeId !== 'planning') throw new acp.RequestError(-32602, `unknown mode ${params.modeId}: executing or planning`);
      s.mode = params.modeId;
      s.update({ sessionUpdate: 'current_mode_update', currentModeId: s.mode });
      return {};
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ params }) => {
      const s = known(params.sessionId);
      if (s.prompting) throw new acp.RequestError(-32602, `a prompt is already running in session ${s.id}`, { code: 'SESSION_BUSY' });
      s.prompting = true;
      s.cancelled = false;
      s.lastError = null;
      try {
        return await s.prompt(params.prompt);
      } catch (e) {
        throw requestError(e, s.id);
      } finally {
        s.prompting = false;
      }
    })
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
      sessions.get(params.sessionId)?.cancel();
    });
  connection = app.connect(stream);
  void connection.closed.finally(() => {
    for (const s of sessions.values()) s.close();
    sessions.clear();
  });
  return connection;
}
