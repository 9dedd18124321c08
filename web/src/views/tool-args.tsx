import { structuredPatch } from 'diff';
import type { ToolCall } from '../../../src/core/conversation/turns.js';

/**
 * A tool call's arguments as a person reads them: an `Edit` as a line diff of `old_string`
 * against `new_string` and a `Write` as the lines it writes (jsdiff, the library the terminal
 * client's diff uses too), `Bash` its command, any other tool its arguments as labelled fields with
 * real line breaks, never JSON with `\n` escapes. The console has the call's arguments only, not the
 * file, so a Write is all additions and no line numbers are shown.
 */

export function parseArgs(s: string | null | undefined): Record<string, unknown> | null {
  if (!s) return {};
  try {
    const v = JSON.parse(s);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

export interface DiffLine {
  kind: 'add' | 'del' | 'ctx' | 'gap';
  text: string;
}

const lines = (text: string) => text.replace(/\n$/, '').split('\n');

/** The lines an Edit or Write changes, or null for other tools and unreadable arguments. */
export function fileDiff(tool: string, args: Record<string, unknown> | null): DiffLine[] | null {
  if (!args) return null;
  if (tool === 'Edit' && typeof args.old_string === 'string' && typeof args.new_string === 'string') {
    const patch = structuredPatch('a', 'b', `${args.old_string}\n`, `${args.new_string}\n`, '', '', { context: 3 });
    return patch.hunks.flatMap((h, i) => [
      ...(i > 0 ? [{ kind: 'gap' as const, text: '…' }] : []),
      ...h.lines
        .filter((l) => !l.startsWith('\\'))
        .map((l): DiffLine => ({ kind: l[0] === '+' ? 'add' : l[0] === '-' ? 'del' : 'ctx', text: l.slice(1) })),
    ]);
  }
  if (tool === 'Write' && typeof args.content === 'string') return args.content ? lines(args.content).map((text) => ({ kind: 'add', text })) : [];
  return null;
}

const MARK = { add: '+', del: '-', ctx: ' ', gap: '' };

export function DiffView({ diff, path }: { diff: DiffLine[]; path?: string }) {
  const added = diff.filter((l) => l.kind === 'add').length;
  const removed = diff.filter((l) => l.kind === 'del').length;
  return (
    <figure class="diff">
      <figcaption>
        {path && <code class="dpath">{path}</code>} <span class="dadd">+{added}</span> <span class="ddel">-{removed}</span>
        <span class="sr-only">
          {' '}
          ({added} lines added, {removed} removed)
        </span>
      </figcaption>
      <pre>
        {diff.map((l, i) => (
          <span key={i} class={`dl d-${l.kind}`}>
            <span class="dmark" aria-hidden="true">
              {MARK[l.kind]}
            </span>
            {l.kind === 'add' && <span class="sr-only">added: </span>}
            {l.kind === 'del' && <span class="sr-only">removed: </span>}
            {l.text || ' '}
            {'\n'}
          </span>
        ))}
      </pre>
    </figure>
  );
}

function Value({ v }: { v: unknown }) {
  if (typeof v === 'string') return v.includes('\n') || v.length > 80 ? <pre class="val">{v}</pre> : <span class="val">{v}</span>;
  if (v === null || typeof v !== 'object') return <span class="val">{String(v)}</span>;
  if (Array.isArray(v) && v.every((x) => typeof x !== 'object' || x === null)) return <span class="val">{v.map(String).join(', ')}</span>;
  return <pre class="val">{JSON.stringify(v, null, 2)}</pre>;
}

/** Arguments as labelled fields (the object's own order); text that is not an object as it is. */
export function ArgFields({ args, raw, skip = [] }: { args: Record<string, unknown> | null; raw: string | null; skip?: string[] }) {
  if (!args) return <pre class="args">{raw ?? ''}</pre>;
  const entries = Object.entries(args).filter(([k]) => !skip.includes(k));
  if (entries.length === 0) return null;
  return (
    <dl class="args fields">
      {entries.map(([k, v]) => (
        <div key={k} class="field">
          <dt>{k.replace(/_/g, ' ')}</dt>
          <dd>
            <Value v={v} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** The body of a call's arguments: a diff, a command, or fields. */
export function ToolArgs({ call }: { call: ToolCall }) {
  const args = parseArgs(call.arguments);
  const diff = fileDiff(call.tool_name, args);
  if (diff && args) {
    return (
      <>
        <DiffView diff={diff} path={typeof args.file_path === 'string' ? args.file_path : undefined} />
        <ArgFields args={args} raw={call.arguments} skip={['file_path', 'old_string', 'new_string', 'content']} />
      </>
    );
  }
  if (call.tool_name === 'Bash' && args && typeof args.command === 'string') {
    return (
      <>
        <pre class="args cmd">
          <span aria-hidden="true">$ </span>
          {args.command}
        </pre>
        <ArgFields args={args} raw={call.arguments} skip={['command']} />
      </>
    );
  }
  return <ArgFields args={args} raw={call.arguments} />;
}
