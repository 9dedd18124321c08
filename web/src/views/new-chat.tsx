import { useEffect, useRef, useState } from 'preact/hooks';
import { type Models, rest } from '../api.js';
import type { Connection } from '../connection.js';
import { ackText, errorText } from '../errors.js';
import { href, navigate } from '../router.js';
import { Notice } from './notice.js';

/**
 * The empty state: no session open. It is a composer, as in opencode web: the first message
 * creates the session (with the model and mode chosen here), is sent to it, and the chat opens.
 * The session is titled from that message's first line, as the terminal client titles it.
 * Ctrl+Shift+O from anywhere comes back here (sessions.tsx).
 */

/** The first non-empty line, spaces folded, cut at a word near 80 characters. */
export function titleFrom(message: string, max = 80): string {
  const one = (message.split('\n').find((l) => l.trim()) ?? '').replace(/\s+/g, ' ').trim();
  if (one.length <= max) return one;
  const cut = one.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > max / 2 ? cut.slice(0, space) : cut}…`;
}

/** The models a new session may use, with the service's default chosen. */
export function useModels(onError: (m: string) => void) {
  const [models, setModels] = useState<Models | null>(null);
  const [model, setModel] = useState('');
  useEffect(() => {
    rest.models().then(
      (m) => {
        setModels(m);
        setModel(m.default);
      },
      (e) => onError(errorText(e)),
    );
  }, [onError]);
  return { models, model, setModel };
}

/** Enter sends, Shift+Enter (or an input method composing) adds a line: the composers' keys. */
export const enterSends = (send: (e: Event) => unknown) => (e: KeyboardEvent) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) void send(e);
};

export function NewChat({ conn, onCreated }: { conn: Connection; onCreated: () => void }) {
  const [mode, setMode] = useState<'executing' | 'planning'>('executing');
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // A session made by an attempt whose message the service then refused: the next try reuses it.
  const made = useRef<string | null>(null);
  const box = useRef<HTMLTextAreaElement>(null);
  const { models, model, setModel } = useModels(setError);
  useEffect(() => box.current?.focus(), []);
  const send = async (e?: Event) => {
    e?.preventDefault();
    const message = text.trim();
    if (!message || busy) return;
    setBusy(true);
    setError(null);
    try {
      const id = made.current ?? (await rest.create({ intent: titleFrom(message), model: model || undefined, mode })).session_id;
      made.current = id;
      const ack = await conn.request('chat:send', { session_id: id, message, mode });
      if (!ack.ok) return setError(ackText(ack));
      onCreated();
      navigate(href(id));
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="new-chat" aria-labelledby="new-chat-title">
      <h1 id="new-chat-title">New chat</h1>
      <p class="muted">Write your first message: it starts a session. Pick one from the sessions list to go back to it.</p>
      <form class="composer" onSubmit={send}>
        <label for="first-message" class="sr-only">
          Message
        </label>
        <textarea
          id="first-message"
          ref={box}
          rows={4}
          placeholder="Message the agent (Enter sends, Shift+Enter for a new line)"
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={enterSends(send)}
        />
        <div class="row">
          <select aria-label="Model of the new session" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
            {(models?.models ?? []).map((m) => (
              <option key={m.id} value={m.id}>
                {m.name}
              </option>
            ))}
          </select>
          <select aria-label="Mode of the new session" value={mode} onChange={(e) => setMode(e.currentTarget.value as 'executing' | 'planning')}>
            <option value="executing">executing</option>
            <option value="planning">planning</option>
          </select>
          <button type="submit" class="primary" disabled={!text.trim() || busy}>
            {busy ? 'Starting…' : 'Send'}
          </button>
        </div>
      </form>
      <Notice error={error} />
    </section>
  );
}

/**
 * The empty state for a viewer (docs/identity.md): no composer, since their role cannot start a
 * session; where what they may read is instead.
 */
export function ReaderHome() {
  return (
    <section class="new-chat" aria-labelledby="reader-home-title">
      <h1 id="reader-home-title">Nothing open</h1>
      <p class="muted">Your role reads sessions and cannot start one. Pick a session from the list: your own, or one of a team workspace you belong to. Share links open here too.</p>
    </section>
  );
}
