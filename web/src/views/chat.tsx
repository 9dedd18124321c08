import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { rest } from '../api.js';
import { isSessionEvent } from '../../../src/core/events/protocol.js';
import { ChatModel } from '../chat-model.js';
import { sessionStatus } from '../session-status.js';
import type { Connection } from '../connection.js';
import { ackText, errorText } from '../errors.js';
import { useVirtualList } from '../virtual.js';
import { TurnView, type TurnContext } from './turns.js';
import { enterSends } from './new-chat.js';
import { inboxChanged } from './inbox.js';
import { Notice } from './notice.js';

/**
 * The chat of one session: its turns live from the event stream, a composer, stop. Drawing is
 * batched per animation frame, so a fast stream of deltas costs one render per frame, and only
 * the turns near the viewport are in the DOM (virtual.ts), so a long session costs what a short
 * one does. `sessionStorage['agentsvc.render-all'] = '1'` draws every turn instead: the baseline
 * of bench/console.ts.
 */

/** Space between turns and around the list, in px: `.turns` gap and padding (0.8rem of 15px). */
const GAP = 12;
const draftKey = (id: string) => `agentsvc.draft.${id}`;
/** Queued messages go out as one, the way the terminal client sends what was typed during a run. */
const joinQueued = (q: string[]) => q.join('\n\n');

function useChat(id: string, conn: Connection, onChanged: () => void) {
  const [model] = useState(() => new ChatModel());
  const [, setVersion] = useState(0);
  const [ready, setReady] = useState(false);
  const [loadError, setLoadError] = useState<string | null>(null);
  useEffect(() => {
    let frame = 0;
    let closed = false;
    const draw = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setVersion(model.version);
      });
    };
    // The newest chat:start / chat:end of the replay: the session's status once the replay is in.
    let replayed: { name: string; p: unknown } | null = null;
    const onEvent = (name: string, p: { session_id?: string } | null) => {
      if (!isSessionEvent(name) || p?.session_id !== id) return;
      if (!model.apply(name, p)) return;
      draw();
      if (name !== 'chat:end' && name !== 'chat:start') return;
      // The header and the sidebar read the status from this one store, in the same render.
      if (model.live) sessionStatus.fromEvent(id, name, p);
      else replayed = { name, p };
      // The title may have changed with the run; the header's inbox count with a pause or an answer.
      if (model.live) {
        if (name === 'chat:end') onChanged();
        inboxChanged();
      }
    };
    let first = true;
    const subscribe = async () => {
      // Ended by the service (session:closed): subscribing again would only be refused.
      if (model.closed) return;
      // First time: the whole kept stream (since 0) for an exact position; after a drop: from there.
      const ack = await conn.request('session:subscribe', { session_id: id, since_seq: model.lastSeq });
      if (closed) return;
      if (!ack.ok) return setLoadError(ackText(ack));
      // The replay is in: what follows is live (notices from here on are shown).
      model.live = true;
      if (replayed) sessionStatus.fromEvent(id, replayed.name, replayed.p, false);
      replayed = null;
      setLoadError(null);
      // After a drop (a restart): the session's status and title may have changed meanwhile.
      if (!first) return void onChanged();
      first = false;
      const ackSeq = model.lastSeq;
      try {
        model.merge(await rest.messages(id), ackSeq);
        setReady(true);
        draw();
      } catch (e) {
        setLoadError(errorText(e));
      }
    };
    // While this pane is open its run events reach the store live: the lists need not read them again.
    const unfollow = sessionStatus.follow(id);
    conn.socket.onAny(onEvent);
    conn.socket.on('connect', subscribe);
    if (conn.socket.connected) void subscribe();
    return () => {
      closed = true;
      unfollow();
      cancelAnimationFrame(frame);
      conn.socket.offAny(onEvent);
      conn.socket.off('connect', subscribe);
      if (conn.socket.connected) conn.socket.emit('session:unsubscribe', { session_id: id }, () => {});
    };
  }, [id, conn, model, onChanged]);
  const redraw = useCallback(() => setVersion(model.version), [model]);
  return { model, ready, loadError, redraw };
}

/**
 * `readOnly`: why this reader cannot send (a viewer, or a teammate reading the session through a
 * team workspace, docs/identity.md); the composer, Stop and the answer forms give way to it.
 */
export function ChatPane({ id, conn, onChanged, readOnly = null, reader = false }: { id: string; conn: Connection; onChanged: () => void; readOnly?: string | null; reader?: boolean }) {
  const { model, ready, loadError, redraw } = useChat(id, conn, onChanged);
  const [text, setText] = useState(() => sessionStorage.getItem(draftKey(id)) ?? '');
  const [mode, setMode] = useState<'executing' | 'planning'>('executing');
  const [error, setError] = useState<string | null>(null);
  const [stopping, setStopping] = useState(false);
  const [renderAll] = useState(() => sessionStorage.getItem('agentsvc.render-all') === '1');
  const list = useRef<HTMLDivElement>(null);
  // Until the stored list said which turns are on the branch, the replay may hold rewound ones.
  // Read once per applied event, not once per redraw: measuring turns while scrolling redraws often.
  const roots = useMemo(() => (ready ? model.roots() : []), [ready, model, model.version]);
  const rootsRef = useRef(roots);
  rootsRef.current = roots;
  // One key function for the list's life: a new one makes the virtualiser lay out every turn again.
  const key = useCallback((i: number) => rootsRef.current[i].turn_id, []);
  const { virtualizer, before, after } = useVirtualList({
    count: roots.length,
    key,
    getScrollElement: () => list.current,
    gap: GAP,
    padding: GAP,
    enabled: !renderAll,
  });
  const shown = renderAll ? roots.map((_, index) => ({ index })) : virtualizer.getVirtualItems();

  const stick = useRef(true);
  useEffect(() => sessionStorage.setItem(draftKey(id), text), [id, text]);
  // Follow the stream while the reader is at the bottom; leave them alone when they scrolled up.
  useEffect(() => {
    const el = list.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  });
  // The room of the turns not drawn, as spacer heights (set through the CSSOM: the CSP allows no
  // inline style attribute).
  const top = useRef<HTMLDivElement>(null);
  const bottom = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    if (top.current) top.current.style.height = `${before}px`;
    if (bottom.current) bottom.current.style.height = `${after}px`;
  });
  useEffect(() => {
    if (!model.running) setStopping(false);
  }, [model.running]);

  // Messages written while a run streams wait here (shown as queued) and go out when it ends.
  const [queued, setQueued] = useState<string[]>([]);
  const [retry, setRetry] = useState(0);
  const flushing = useRef(false);
  const textarea = useRef<HTMLTextAreaElement>(null);
  /** Send now: 'busy' when the service says a run is still going (the message then waits). */
  const deliver = async (message: string): Promise<'sent' | 'busy' | 'failed'> => {
    const ack = await conn.request('chat:send', { session_id: id, message, mode });
    if (!ack.ok && ack.error.code === 'SESSION_BUSY') return 'busy';
    setError(ackText(ack));
    return ack.ok ? 'sent' : 'failed';
  };
  // A message the service refused goes back into the composer, so nothing typed is lost.
  const giveBack = (message: string) => setText((t) => joinQueued([message, ...(t.trim() ? [t] : [])]));
  const send = async (e?: Event) => {
    e?.preventDefault();
    const message = text.trim();
    if (!message) return;
    setError(null);
    setText('');
    stick.current = true;
    if (model.running || queued.length > 0) return setQueued((q) => [...q, message]);
    const r = await deliver(message);
    if (r === 'busy') setQueued((q) => [...q, message]);
    if (r === 'failed') giveBack(message);
  };
  // The run ended: what was queued goes out, as one message. A run started elsewhere and not yet
  // seen here answers SESSION_BUSY: the text stays queued and is tried again a moment later.
  useEffect(() => {
    if (model.running || !ready || queued.length === 0 || flushing.current) return;
    flushing.current = true;
    const batch = queued;
    setQueued([]);
    void deliver(joinQueued(batch)).then((r) => {
      flushing.current = false;
      if (r === 'failed') giveBack(joinQueued(batch));
      if (r !== 'busy') return;
      setQueued((q) => [...batch, ...q]);
      setTimeout(() => setRetry((n) => n + 1), 1000);
    });
  }, [model.running, ready, queued, retry]);
  const stop = async () => {
    setStopping(true);
    const ack = await conn.request('chat:stop', { session_id: id });
    if (!ack.ok) {
      setStopping(false);
      setError(ackText(ack));
    }
  };
  // Esc stops the run and puts what was queued back into the composer, unsent (as the terminal does).
  const onEscape = useRef<(e: KeyboardEvent) => void>(null);
  onEscape.current = (e: KeyboardEvent) => {
    if (e.key !== 'Escape' || e.defaultPrevented || !model.running || readOnly) return;
    const el = e.target as HTMLElement | null;
    // Esc in another field (a rename, a dialog) is that field's.
    if (el && el !== textarea.current && /^(INPUT|SELECT|TEXTAREA)$/.test(el.tagName)) return;
    e.preventDefault();
    if (queued.length > 0) {
      setText((t) => joinQueued([...queued, ...(t.trim() ? [t] : [])]));
      setQueued([]);
    }
    textarea.current?.focus();
    if (!stopping) void stop();
  };
  useEffect(() => {
    const on = (e: KeyboardEvent) => onEscape.current?.(e);
    window.addEventListener('keydown', on);
    return () => window.removeEventListener('keydown', on);
  }, []);
  const ctx: TurnContext = {
    model,
    question: model.question(),
    approval: model.approval(),
    onAnswer: async (tool_call_id, selections, custom) => {
      const ack = await conn.request('chat:send', { session_id: id, message: '', askuser_answer: { tool_call_id, selections, custom } });
      return ackText(ack);
    },
    readOnly: readOnly != null || model.closed != null,
    reader,
  };
  // One header per answer: the agent turns that follow one another (one per model step) are one
  // answer; its first turn shows the tokens of all of them.
  const answers = useMemo(() => {
    const continued = roots.map((t, i) => i > 0 && t.role === 'assistant' && roots[i - 1].role === 'assistant');
    const usage = new Map<number, { input_tokens: number; output_tokens: number }>();
    let head = -1;
    roots.forEach((t, i) => {
      if (!continued[i]) head = i;
      const u = usage.get(head) ?? { input_tokens: 0, output_tokens: 0 };
      usage.set(head, { input_tokens: u.input_tokens + t.usage.input_tokens, output_tokens: u.output_tokens + t.usage.output_tokens });
    });
    return { continued, usage };
  }, [roots]);
  const used = useMemo(() => roots.reduce((u, t) => ({ in: u.in + t.usage.input_tokens, out: u.out + t.usage.output_tokens }), { in: 0, out: 0 }), [roots]);
  return (
    <section class="chat" aria-label="Chat">
      <div
        class="turns"
        ref={list}
        aria-busy={model.running}
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
        }}
      >
        {!ready && !loadError && <p class="muted">Loading the conversation…</p>}
        {ready && roots.length === 0 && <p class="muted">{readOnly ? 'No messages yet.' : 'No messages yet. Write the first one below.'}</p>}
        {before > 0 && <div class="vspace" ref={top} aria-hidden="true" />}
        {shown.map(({ index }) => (
          <TurnView
            key={roots[index].turn_id}
            turn={roots[index]}
            ctx={ctx}
            index={index}
            measure={renderAll ? undefined : virtualizer.measureElement}
            continued={answers.continued[index]}
            usage={answers.usage.get(index)}
          />
        ))}
        {after > 0 && <div class="vspace" ref={bottom} aria-hidden="true" />}
      </div>
      {model.notices.length > 0 && (
        <ul class="notices" aria-label="Notices">
          {model.notices.map((n) => (
            <li key={n.seq} class="notice" data-code={n.code}>
              <span role="status">{n.message}</span>
              <button type="button" class="dismiss" aria-label="Dismiss this notice" onClick={() => {
                  model.dismissNotice(n.seq);
                  redraw();
                }}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <Notice error={loadError ?? error ?? model.error} />
      {queued.length > 0 && (
        <div class="queued" role="status">
          <p class="muted">Queued: sent when the run ends. Esc stops the run and puts it back here.</p>
          <ul aria-label="Queued messages">
            {queued.map((q, i) => (
              <li key={i}>
                <span class="badge">queued</span> <span class="qtext">{q}</span>
              </li>
            ))}
          </ul>
        </div>
      )}
      {model.closed || readOnly ? (
        // The service ended the subscription (session:closed): this takes the composer's place.
        <p class="read-only" role={model.closed ? 'status' : 'note'}>
          {model.closed ?? readOnly}
        </p>
      ) : (
        <form class="composer" onSubmit={send}>
          <label for="message" class="sr-only">
            Message
          </label>
          <textarea
            id="message"
            ref={textarea}
            rows={2}
            placeholder={
              ctx.question
                ? 'Answer the question above, or write a message'
                : ctx.approval
                  ? 'Answer the approval above first'
                  : model.running
                    ? 'Write the next message: it is sent when the run ends (Esc stops the run)'
                    : 'Message the agent (Enter sends, Shift+Enter for a new line)'
            }
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
            onKeyDown={enterSends(send)}
          />
          <div class="row">
            {used.in + used.out > 0 && (
              <span class="usage total" title="tokens used by the turns shown on this branch">
                {used.in} in / {used.out} out tokens
              </span>
            )}
            <select aria-label="Mode of this message" value={mode} onChange={(e) => setMode(e.currentTarget.value as 'executing' | 'planning')}>
              <option value="executing">executing</option>
              <option value="planning">planning</option>
            </select>
            {model.running && (
              <button type="button" class="danger" onClick={stop} disabled={stopping} title="Stop the run (Esc)">
                {stopping ? 'Stopping…' : 'Stop'}
              </button>
            )}
            {model.running ? (
              <button type="submit" disabled={!text.trim() || !ready}>
                Queue
              </button>
            ) : (
              <button type="submit" class="primary" disabled={!text.trim() || !ready}>
                Send
              </button>
            )}
          </div>
        </form>
      )}
    </section>
  );
}
