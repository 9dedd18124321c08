import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Block, ToolCall, Turn } from '../../../src/core/conversation/turns.js';
import type { Approval, ChatModel, Question } from '../chat-model.js';
import { renderMarkdown } from '../markdown.js';
import { ApprovalForm } from './approval.js';
import { Notice } from './notice.js';
import { fileDiff, parseArgs, ToolArgs } from './tool-args.js';

/**
 * One turn as a person reads it: text as markdown, thinking folded, each tool call folded with
 * its arguments and result, a sub-agent's turns nested under the call that started them, a
 * question or a policy approval as buttons.
 */

/** Copy the code of the block whose button `b` is; `word` says how it went for a moment. */
function copy(b: HTMLElement, word: HTMLElement) {
  const code = b.closest('.codeblock')?.querySelector('pre code')?.textContent ?? '';
  navigator.clipboard.writeText(code).then(
    () => (word.textContent = 'Copied'),
    () => (word.textContent = 'Copy failed'),
  );
  setTimeout(() => (word.textContent = 'Copy'), 1500);
}

/**
 * Markdown with a copy button on each code block. renderMarkdown gives each block a head with its
 * language (markdown.ts); the button is added here, after sanitising (DOMPurify removes buttons
 * from model output), with its own listener.
 */
function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  const el = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    for (const head of el.current?.querySelectorAll('.codehead') ?? []) {
      if (head.querySelector('button')) continue;
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'copy';
      // The visible word changes (Copy, Copied); the name keeps it first, as screen readers expect.
      const word = document.createElement('span');
      word.className = 'word';
      word.textContent = 'Copy';
      const what = document.createElement('span');
      what.className = 'sr-only';
      what.textContent = ` the ${head.querySelector('.lang')?.textContent ?? ''} code`;
      b.append(word, what);
      b.addEventListener('click', () => copy(b, word));
      head.append(b);
    }
  }, [html]);
  // Sanitised by renderMarkdown (DOMPurify), under a CSP without inline script
  return <div class="md" ref={el} dangerouslySetInnerHTML={{ __html: html }} />;
}

/** The one argument that says what a call does (a path, a command, a pattern). */
function keyArgument(call: ToolCall): string {
  const a = parseArgs(call.arguments) ?? {};
  const v = a.file_path ?? a.command ?? a.pattern ?? a.url ?? a.query ?? a.description ?? a.path ?? a.subject ?? a.name;
  return typeof v === 'string' ? v : '';
}

/** What a running sub-agent did last: its newest text, or the tool it is calling. */
function latestActivity(turns: Turn[]): string | null {
  for (let i = turns.length - 1; i >= 0; i--) {
    const t = turns[i];
    for (let j = t.blocks.length - 1; j >= 0; j--) {
      const b = t.blocks[j];
      if (b.type === 'tool_use') {
        const c = t.tool_calls.find((x) => x.id === b.tool_call_id);
        if (c) return `${c.display_name || c.tool_name} ${keyArgument(c)}`.trim();
      }
      if (b.type === 'text' && b.content.trim()) {
        const line = b.content.trim().split('\n').at(-1) ?? '';
        return line.length > 140 ? `…${line.slice(-140)}` : line;
      }
    }
  }
  return null;
}

const STATUS: Record<string, string> = { pending: 'running', awaiting_answer: 'waiting for your answer', done: 'done', error: 'error', cancelled: 'cancelled' };

export function QuestionForm({ q, onAnswer }: { q: Question; onAnswer: (toolCallId: string, selections: Record<string, number[]>, custom: Record<string, string>) => Promise<string | null> }) {
  const [picked, setPicked] = useState<Record<string, number[]>>({});
  const [custom, setCustom] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const complete = q.questions.every((_, i) => (picked[i]?.length ?? 0) > 0 || (custom[i] ?? '').trim());
  const pick = (i: number, o: number, multi: boolean) => {
    const now = picked[i] ?? [];
    const next = multi ? (now.includes(o) ? now.filter((x) => x !== o) : [...now, o]) : [o];
    setPicked({ ...picked, [i]: next });
  };
  const send = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    const sel: Record<string, number[]> = {};
    const cus: Record<string, string> = {};
    q.questions.forEach((_, i) => {
      if (picked[i]?.length) sel[String(i)] = picked[i];
      if ((custom[i] ?? '').trim()) cus[String(i)] = custom[i].trim();
    });
    setError(await onAnswer(q.call.id, sel, cus));
    setBusy(false);
  };
  return (
    <form class="question" onSubmit={send} aria-label="Question from the agent">
      {q.questions.map((qq, i) => (
        <fieldset key={i}>
          <legend>
            {qq.header && <span class="qheader">{qq.header}</span>} {qq.question}
          </legend>
          <div class="options">
            {(qq.options ?? []).map((o, j) => (
              <button type="button" key={j} class="option" aria-pressed={picked[i]?.includes(j) ?? false} title={o.description} onClick={() => pick(i, j, !!qq.multiSelect)}>
                {o.label}
              </button>
            ))}
          </div>
          <input aria-label={`Other answer to: ${qq.question}`} placeholder="Other…" value={custom[i] ?? ''} onInput={(e) => setCustom({ ...custom, [i]: e.currentTarget.value })} />
        </fieldset>
      ))}
      <button type="submit" class="primary" disabled={!complete || busy}>
        Answer
      </button>
      <Notice error={error} />
    </form>
  );
}

export interface TurnContext {
  model: ChatModel;
  question: Question | null;
  approval: Approval | null;
  onAnswer: (toolCallId: string, selections: Record<string, number[]>, custom: Record<string, string>) => Promise<string | null>;
  /** The reader may not answer (a viewer, or a teammate reading it): the pause is said, not offered. */
  readOnly?: boolean;
  /** Someone else's session (a teammate's): its user turns are not "You". */
  reader?: boolean;
}

function ToolCallView({ call, ctx }: { call: ToolCall; ctx: TurnContext }) {
  const children = ctx.model.children(call.id);
  const asking = ctx.question?.call.id === call.id;
  const progress = ctx.model.progress.get(call.id);
  // A running sub-agent shows what it does now, under its folded call.
  const live = call.status === 'pending' && children.length > 0 ? latestActivity(children) : null;
  // An Edit or Write says how many lines it changes while folded.
  const diff = useMemo(() => fileDiff(call.tool_name, parseArgs(call.arguments)), [call.tool_name, call.arguments]);
  return (
    <div class={`tool st-${call.status}`}>
      <details>
        <summary>
          <span class="tname">{call.display_name || call.tool_name}</span> <span class="targ">{keyArgument(call)}</span>{' '}
          {diff && (
            <>
              <span class="dadd">+{diff.filter((l) => l.kind === 'add').length}</span> <span class="ddel">-{diff.filter((l) => l.kind === 'del').length}</span>{' '}
            </>
          )}
          <span class="tstatus">
            {call.status === 'awaiting_answer' && ctx.readOnly ? "waiting for the owner's answer" : (STATUS[call.status] ?? call.status)}
            {call.duration_ms ? ` · ${(call.duration_ms / 1000).toFixed(1)} s` : ''}
          </span>
        </summary>
        <div class="tbody">
          <h4>Arguments</h4>
          <ToolArgs call={call} />
          {progress && call.status === 'pending' && <p class="muted">{progress}</p>}
          {children.length > 0 && (
            <section class="subagent" aria-label="Sub-agent">
              {children.map((t, i) => (
                <TurnView key={t.turn_id} turn={t} ctx={ctx} continued={i > 0 && children[i - 1].role === 'assistant' && t.role === 'assistant'} />
              ))}
            </section>
          )}
          {call.result !== null && (
            <>
              <h4>Result</h4>
              <pre class="result">{call.result}</pre>
            </>
          )}
        </div>
      </details>
      {live && (
        <p class="sublive" role="status" aria-label={`Sub-agent progress: ${keyArgument(call)}`}>
          <span class="live" aria-hidden="true">
            ●
          </span>{' '}
          {live}
        </p>
      )}
      {asking && ctx.question && (ctx.readOnly ? <p class="muted">Waiting for the session's owner to answer this question.</p> : <QuestionForm q={ctx.question} onAnswer={ctx.onAnswer} />)}
      {ctx.approval?.call.id === call.id &&
        (ctx.readOnly ? <p class="muted">Waiting for the session's owner to approve or deny this call.</p> : <ApprovalForm a={ctx.approval} onAnswer={ctx.onAnswer} />)}
    </div>
  );
}

/** Blocks in their order, a run of thinking or text kept together. */
function BlockView({ b, turn, ctx }: { b: Block; turn: Turn; ctx: TurnContext }) {
  if (b.type === 'text') return <Markdown text={b.content} />;
  if (b.type === 'thinking')
    return (
      <details class="thinking">
        <summary>Thinking</summary>
        <div class="thought">{b.content}</div>
      </details>
    );
  if (b.type === 'tool_use') {
    const call = turn.tool_calls.find((c) => c.id === b.tool_call_id);
    return call ? <ToolCallView call={call} ctx={ctx} /> : null;
  }
  return null; // tool_result: shown inside its call
}

/**
 * `index` and `measure` place a root turn in the virtualised list (src/virtual.ts measures it).
 * An answer is one run of agent turns (one per model step): only its first turn has a header,
 * with the tokens of the whole answer (`usage`); a `continued` turn draws none.
 */
export function TurnView({
  turn,
  ctx,
  index,
  measure,
  continued,
  usage,
}: {
  turn: Turn;
  ctx: TurnContext;
  index?: number;
  measure?: (el: HTMLElement | null) => void;
  continued?: boolean;
  usage?: { input_tokens: number; output_tokens: number };
}) {
  if (turn.kind === 'compaction') {
    return (
      <article class="turn system" data-index={index} ref={measure}>
        <details>
          <summary>Earlier turns summarised{turn.archived_count ? ` (${turn.archived_count})` : ''}</summary>
          <Markdown text={turn.summary_full ?? turn.summary_preview ?? turn.failure_reason ?? ''} />
        </details>
      </article>
    );
  }
  const label = turn.role === 'user' ? (ctx.reader ? 'Owner' : 'You') : turn.parent_fork_tool_call_id ? 'Sub-agent' : 'Agent';
  const used = usage ?? turn.usage;
  const ended = turn.status === 'failed' || turn.status === 'interrupted';
  if (continued)
    return (
      <article class={`turn ${turn.role} ts-${turn.status} continued`} data-turn={turn.turn_id} aria-label={`${label} (continued)`} data-index={index} ref={measure}>
        {turn.blocks.map((b, i) => (
          <BlockView key={i} b={b} turn={turn} ctx={ctx} />
        ))}
        {ended && <p class="tstate">{turn.status}</p>}
      </article>
    );
  return (
    <article class={`turn ${turn.role} ts-${turn.status}`} data-turn={turn.turn_id} aria-label={label} data-index={index} ref={measure}>
      <div class="who">
        {label}
        {turn.status === 'streaming' && (
          <span class="live" title="writing">
            {' '}
            ● <span class="sr-only">writing</span>
          </span>
        )}
        {ended && <span class="tstate"> · {turn.status}</span>}
        {turn.role === 'assistant' && used.input_tokens + used.output_tokens > 0 && (
          <span class="usage">
            {' '}
            · {used.input_tokens} in / {used.output_tokens} out tokens
          </span>
        )}
      </div>
      {turn.blocks.map((b, i) => (
        <BlockView key={i} b={b} turn={turn} ctx={ctx} />
      ))}
    </article>
  );
}
