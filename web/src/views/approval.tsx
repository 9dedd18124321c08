import { useState } from 'preact/hooks';
import type { Approval } from '../chat-model.js';
import { Notice } from './notice.js';
import { ToolArgs } from './tool-args.js';

/**
 * A tool call held by the policy (docs/policy.md): what would run and the rule that asks,
 * answered with one of the offered options as `chat:send askuser_answer {tool_call_id,
 * selections: {"0": [i]}, custom: {"0": reason}?}`. The reason goes with any answer; the service
 * quotes it in a denial.
 */

function ruleText(rule: unknown): string {
  if (!rule || typeof rule !== 'object') return rule ? String(rule) : '';
  const r = rule as { action?: string; tool?: string; pattern?: string };
  return [r.action, r.tool, r.pattern].filter(Boolean).join(' ');
}

export function ApprovalForm({ a, onAnswer }: { a: Approval; onAnswer: (toolCallId: string, selections: Record<string, number[]>, custom: Record<string, string>) => Promise<string | null> }) {
  const [reason, setReason] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const answer = async (i: number) => {
    setBusy(true);
    setError(await onAnswer(a.call.id, { '0': [i] }, reason.trim() ? { '0': reason.trim() } : {}));
    setBusy(false);
  };
  const rule = ruleText(a.rule);
  return (
    <section class="approval" aria-label={`Approval: ${a.tool_name}`}>
      <p>
        <strong>The agent wants to run {a.tool_name}.</strong> {rule && <span class="muted">Rule “{rule}”</span>}
        {a.source && <span class="muted"> from {a.source}</span>}
        {rule || a.source ? <span class="muted"> asks you first.</span> : null}
      </p>
      {/* What would run, as the chat shows a call: a Write or an Edit as its diff, Bash its command, other tools labelled fields. */}
      <ToolArgs call={{ ...a.call, tool_name: a.tool_name, arguments: typeof a.arguments === 'string' ? a.arguments : JSON.stringify(a.arguments ?? {}) }} />
      <input aria-label="Reason (optional)" placeholder="Reason (optional, sent with your answer)" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      <div class="options">
        {a.options.map((o, i) => (
          <button type="button" key={o} class={/deny/i.test(o) ? 'danger' : i === 0 ? 'primary' : ''} disabled={busy} onClick={() => answer(i)}>
            {o}
          </button>
        ))}
      </div>
      <Notice error={error} />
    </section>
  );
}
