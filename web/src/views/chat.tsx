import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, rest } from '../api.js';
import { isSessionEvent } from '../../../src/core/events/protocol.js';
import { ChatModel } from '../chat-model.js';
import type { Ack, Connection } from '../connection.js';
import { useVirtualList } from '../virtual.js';
import { TurnView, type TurnContext } from './turns.js';
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
const ackError = (a: Ack) => (a.ok ? null : a.error.message || a.error.code);

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
    const onEvent = (name: string, p: { session_id?: string } | null) => {
      if (!isSessionEvent(name) || p?.session_id !== id) return;
      if (model.apply(name, p)) draw();
      if (name === 'chat:end' || name === 'chat:start') {
        onChanged();
        // Read once more a moment later: a list request already under way may have crossed the end.
        if (name === 'chat:end') setTimeout(onChanged, 600);
      }
    };
    let first = true;
    const subscribe = async () => {
      // First time: the whole kept stream (since 0) for an exact position; after a drop: from there.
      const ack = await conn.request('session:subscribe', { session_id: id, since_seq: model.lastSeq });
      if (closed) return;
      if (!ack.ok) return setLoadError(ackError(ack));
      // The replay is in: what follows is live (notices from here on are shown).
      model.live = true;
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
        setLoadError(e instanceof ApiError ? e.message : String(e));
      }
    };
    conn.socket.onAny(onEvent);
    conn.socket.on('connect', subscribe);
    if (conn.socket.connected) void subscribe();
    return () => {
      closed = true;
      cancelAnimationFrame(frame);
      conn.socket.offAny(onEvent);
      conn.socket.off('connect', subscribe);
      if (conn.socket.connected) conn.socket.emit('session:unsubscribe', { session_id: id }, () => {});
    };
  }, [id, conn, model, onChanged]);
  const redraw = useCallback(() => setVersion(model.version), [model]);
  return { model, ready, loadError, redraw };
}

export function ChatPane({ id, conn, onChanged }: { id: string; conn: Connection; onChanged: () => void }) {
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

  const send = async (e?: Event) => {
    e?.preventDefault();
    const message = text.trim();
    if (!message) return;
    setError(null);
    const ack = await conn.request('chat:send', { session_id: id, message, mode });
    if (ack.ok) {
      setText('');
      stick.current = true;
    } else setError(ackError(ack));
  };
  const stop = async () => {
    setStopping(true);
    const ack = await conn.request('chat:stop', { session_id: id });
    if (!ack.ok) {
      setStopping(false);
      setError(ackError(ack));
    }
  };
  const ctx: TurnContext = {
    model,
    question: model.question(),
    approval: model.approval(),
    onAnswer: async (tool_call_id, selections, custom) => {
      const ack = await conn.request('chat:send', { session_id: id, message: '', askuser_answer: { tool_call_id, selections, custom } });
      return ackError(ack);
    },
  };
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
        {ready && roots.length === 0 && <p class="muted">No messages yet. Write the first one below.</p>}
        {before > 0 && <div class="vspace" ref={top} aria-hidden="true" />}
        {shown.map(({ index }) => (
          <TurnView key={roots[index].turn_id} turn={roots[index]} ctx={ctx} index={index} measure={renderAll ? undefined : virtualizer.measureElement} />
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
      <form class="composer" onSubmit={send}>
        <label for="message" class="sr-only">
          Message
        </label>
        <textarea
          id="message"
          rows={2}
          placeholder={ctx.question ? 'Answer the question above, or write a message' : ctx.approval ? 'Answer the approval above first' : 'Message the agent (Enter sends, Shift+Enter for a new line)'}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) void send(e);
          }}
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
          {model.running ? (
            <button type="button" class="danger" onClick={stop} disabled={stopping}>
              {stopping ? 'Stopping…' : 'Stop'}
            </button>
          ) : (
            <button type="submit" class="primary" disabled={!text.trim() || !ready}>
              Send
            </button>
          )}
        </div>
      </form>
    </section>
  );
}
