import { useMemo, useState } from 'preact/hooks';
import type { Block, ToolCall, Turn } from '../../../src/core/conversation/turns.js';
import type { Approval, ChatModel, Question } from '../chat-model.js';
import { renderMarkdown } from '../markdown.js';
import { ApprovalForm } from './approval.js';
import { Notice } from './notice.js';

/**
 * One turn as a person reads it: text as markdown, thinking folded, each tool call folded with
 * its arguments and result, a sub-agent's turns nested under the call that started them, a
 * question or a policy approval as buttons.
 */

function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  // Sanitised by renderMarkdown (DOMPurify), under a CSP without inline script
  return <div class="md" dangerouslySetInnerHTML={{ __html: html }} />;
}

function pretty(s: string | null): string {
  if (!s) return '';
  try {
    return JSON.stringify(JSON.parse(s), null, 2);
  } catch {
    return s;
  }
}

/** The one argument that says what a call does (a path, a command, a pattern). */
function keyArgument(call: ToolCall): string {
  try {
    const a = JSON.parse(call.arguments || '{}');
    const v = a.file_path ?? a.command ?? a.pattern ?? a.url ?? a.query ?? a.description ?? a.path ?? a.subject ?? a.name;
    return typeof v === 'string' ? v : '';
  } catch {
    return '';
  }
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
}

function ToolCallView({ call, ctx }: { call: ToolCall; ctx: TurnContext }) {
  const children = ctx.model.children(call.id);
  const asking = ctx.question?.call.id === call.id;
  const progress = ctx.model.progress.get(call.id);
  return (
    <div class={`tool st-${call.status}`}>
      <details>
        <summary>
          <span class="tname">{call.display_name || call.tool_name}</span> <span class="targ">{keyArgument(call)}</span>{' '}
          <span class="tstatus">
            {STATUS[call.status] ?? call.status}
            {call.duration_ms ? ` · ${(call.duration_ms / 1000).toFixed(1)} s` : ''}
          </span>
        </summary>
        <div class="tbody">
          <h4>Arguments</h4>
          <pre class="args">{pretty(call.arguments)}</pre>
          {progress && call.status === 'pending' && <p class="muted">{progress}</p>}
          {children.length > 0 && (
            <section class="subagent" aria-label="Sub-agent">
              {children.map((t) => (
                <TurnView key={t.turn_id} turn={t} ctx={ctx} />
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
      {asking && ctx.question && <QuestionForm q={ctx.question} onAnswer={ctx.onAnswer} />}
      {ctx.approval?.call.id === call.id && <ApprovalForm a={ctx.approval} onAnswer={ctx.onAnswer} />}
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

/** `index` and `measure` place a root turn in the virtualised list (src/virtual.ts measures it). */
export function TurnView({ turn, ctx, index, measure }: { turn: Turn; ctx: TurnContext; index?: number; measure?: (el: HTMLElement | null) => void }) {
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
  const label = turn.role === 'user' ? 'You' : turn.parent_fork_tool_call_id ? 'Sub-agent' : 'Agent';
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
        {(turn.status === 'failed' || turn.status === 'interrupted') && <span class="tstate"> · {turn.status}</span>}
        {turn.role === 'assistant' && turn.usage.input_tokens + turn.usage.output_tokens > 0 && (
          <span class="usage">
            {' '}
            · {turn.usage.input_tokens} in / {turn.usage.output_tokens} out tokens
          </span>
        )}
      </div>
      {turn.blocks.map((b, i) => (
        <BlockView key={i} b={b} turn={turn} ctx={ctx} />
      ))}
    </article>
  );
}
