import type { Turn } from '../../core/conversation/turns.js';
import { escapeHtml as esc } from './markdown.js';

/**
 * The share page: the conversation as plain HTML and CSS (no JavaScript), readable on a phone.
 * The agents' text is markdown (./markdown.ts: safe, code highlighted); what people typed stays as
 * typed. Thinking and tool results fold (<details>); a sub-agent's turns nest under the call that
 * started them, labelled by its description; images are shown when they are data: or https: URLs.
 * Everything else is escaped.
 */

export type Md = (text: string) => string;
const OUTPUT_CHARS = 20_000;

function clip(s: string): string {
  return s.length > OUTPUT_CHARS ? `${s.slice(0, OUTPUT_CHARS)}\n… (${s.length - OUTPUT_CHARS} more characters)` : s;
}

function args(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}

/** The argument that says what a call does (a sub-agent's description, a command, a path), on one line. */
function keyArgument(args: string): string {
  try {
    const a = JSON.parse(args) as Record<string, unknown>;
    const key = ['description', 'command', 'file_path', 'pattern', 'url', 'query', 'prompt'].find((k) => typeof a[k] === 'string' && (a[k] as string).trim());
    const one = key ? (a[key] as string).replace(/\s+/g, ' ').trim() : '';
    return one.length > 80 ? `${one.slice(0, 79)}…` : one;
  } catch {
    return '';
  }
}

/**
 * One turn as an article, its sub-agents' turns (`children`: by the id of the call that started
 * them, in order) nested under their call; '' when it shows nothing.
 */
export function turnHtml(t: Turn, children: Map<string, Turn[]>, md: Md, who: string): string {
  const parts: string[] = [];
  const prose = (text: string) => (t.role === 'assistant' ? `<div class="md">${md(text)}</div>` : `<div class="text">${esc(text)}</div>`);
  for (const b of t.blocks) {
    if (b.type === 'text' && b.content.trim()) parts.push(prose(b.content));
    else if (b.type === 'thinking' && b.content.trim()) parts.push(`<details class="thinking"><summary>Thinking</summary><div class="text">${esc(b.content)}</div></details>`);
    else if (b.type === 'image' && /^(data:image\/[a-z0-9.+-]+;base64,|https:\/\/)/i.test(b.content)) parts.push(`<img src="${esc(b.content)}" alt="image from the conversation" loading="lazy">`);
  }
  for (const c of t.tool_calls) {
    const arg = keyArgument(c.arguments);
    // A sub-agent's turns are labelled by its description: several may run side by side.
    const nested = (children.get(c.id) ?? []).map((x) => turnHtml(x, children, md, arg || 'Sub-agent')).join('');
    parts.push(
      `<details class="tool"><summary><span class="name">${esc(c.display_name || c.tool_name)}</span>${arg ? ` <span class="arg">${esc(arg)}</span>` : ''} <span class="status s-${esc(c.status)}">${esc(c.status)}</span>${c.duration_ms ? ` <span class="ms">${c.duration_ms} ms</span>` : ''}</summary>` +
        `<pre class="args">${esc(clip(args(c.arguments)))}</pre>` +
        (nested ? `<div class="sub">${nested}</div>` : '') +
        (c.result != null ? `<pre class="result">${esc(clip(c.result))}</pre>` : '') +
        '</details>',
    );
  }
  if (t.kind === 'compaction') parts.unshift('<div class="note">Earlier conversation summarised</div>');
  if (!parts.length) return '';
  // A sub-agent's user turn is the task its caller gave it.
  const role = t.role === 'system' ? 'System' : t.role !== 'user' ? who : t.parent_fork_tool_call_id ? `${who} · task` : 'You';
  return `<article class="turn ${esc(t.role)}"><header>${esc(role)}</header>${parts.join('')}</article>`;
}

/**
 * The page before its turns: `count` is every turn of the branch (sub-agents' included). The body
 * is the top-level turns that are not deprecated, each `turnHtml` joined by a newline, or
 * NO_MESSAGES when that is empty; then PAGE_END.
 */
export function pageStart(intent: string, count: number, expiresAt: Date): string {
  const title = intent.trim() || 'Shared conversation';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${esc(title)}</title>
<style>
:root { color-scheme: light dark; --bg: #fbfbfa; --fg: #1d1d1f; --muted: #6b6b70; --card: #fff; --line: #e3e3e6; --user: #eef4ff; --code: #f4f4f5; --link: #0b57d0;
  --kw: #a626a4; --str: #2e7d32; --num: #b35900; --com: #6a737d; --fn: #1f5fbf; --del: #cf222e; }
@media (prefers-color-scheme: dark) { :root { --bg: #151517; --fg: #ececf0; --muted: #9a9aa2; --card: #1e1e22; --line: #303036; --user: #1d2a40; --code: #26262b; --link: #8ab4f8;
  --kw: #d38df0; --str: #8fd18f; --num: #f0b070; --com: #8b949e; --fn: #79b8ff; --del: #ff7b72; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 16px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; }
main { max-width: 820px; margin: 0 auto; padding: 24px 16px 64px; }
h1 { font-size: 1.35rem; margin: 0 0 4px; overflow-wrap: anywhere; }
.meta { color: var(--muted); font-size: .85rem; margin-bottom: 24px; }
.turn { background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 12px 14px; margin: 12px 0; }
.turn.user { background: var(--user); }
.turn header { font-size: .75rem; font-weight: 600; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin-bottom: 6px; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
.md { overflow-wrap: anywhere; }
.md > :first-child { margin-top: 0; } .md > :last-child { margin-bottom: 0; }
.md h1, .md h2, .md h3, .md h4 { line-height: 1.3; margin: 1em 0 .4em; } .md h1 { font-size: 1.3rem; } .md h2 { font-size: 1.15rem; } .md h3, .md h4 { font-size: 1rem; }
.md p, .md ul, .md ol, .md blockquote, .md table, .md pre { margin: .6em 0; }
.md ul, .md ol { padding-left: 1.4em; }
.md a { color: var(--link); }
.md blockquote { border-left: 3px solid var(--line); padding-left: 10px; color: var(--muted); }
.md code { font: .9em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--code); border-radius: 4px; padding: 1px 4px; }
.md pre code { background: none; padding: 0; font-size: 13px; }
.md pre.code { white-space: pre; overflow-wrap: normal; }
.md table { border-collapse: collapse; display: block; overflow-x: auto; max-width: 100%; }
.md th, .md td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; }
.md th { background: var(--code); }
.md hr { border: 0; border-top: 1px solid var(--line); }
.hljs-keyword, .hljs-selector-tag, .hljs-built_in, .hljs-literal, .hljs-type { color: var(--kw); }
.hljs-string, .hljs-regexp, .hljs-addition, .hljs-attribute { color: var(--str); }
.hljs-number, .hljs-symbol, .hljs-variable, .hljs-template-variable, .hljs-attr { color: var(--num); }
.hljs-comment, .hljs-quote, .hljs-meta { color: var(--com); font-style: italic; }
.hljs-title, .hljs-section, .hljs-name, .hljs-function { color: var(--fn); }
.hljs-deletion { color: var(--del); }
details { border: 1px solid var(--line); border-radius: 8px; margin: 8px 0; padding: 6px 10px; }
summary { cursor: pointer; font-size: .9rem; }
.thinking .text { color: var(--muted); font-style: italic; }
.tool .name { font-weight: 600; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.status { font-size: .75rem; padding: 1px 6px; border-radius: 999px; background: var(--code); }
.s-done { color: #1a7f37; } .s-error, .s-cancelled { color: #cf222e; }
.ms { color: var(--muted); font-size: .75rem; }
.tool .arg { color: var(--muted); font-size: .85rem; overflow-wrap: anywhere; }
.ms, .status { white-space: nowrap; }
pre { background: var(--code); border-radius: 6px; padding: 8px; overflow-x: auto; font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
.sub { border-left: 3px solid var(--line); padding-left: 10px; margin: 8px 0; }
img { max-width: 100%; height: auto; border-radius: 8px; }
.note { color: var(--muted); font-style: italic; }
footer { color: var(--muted); font-size: .8rem; margin-top: 32px; }
</style></head>
<body><main>
<h1>${esc(title)}</h1>
<div class="meta">Shared conversation · ${count} entries · link expires ${esc(expiresAt.toISOString().slice(0, 16).replace('T', ' '))} UTC</div>
`;
}

export const NO_MESSAGES = '<p class="note">No messages yet.</p>';
export const PAGE_END = `
<footer>Read-only copy served by agentsvc.</footer>
</main></body></html>`;

export function renderGone(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">
<title>Link not available</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:560px;margin:15vh auto;padding:0 16px;color:#444}</style></head>
<body><h1>This link is not available</h1><p>The shared conversation does not exist, the link expired, or its owner revoked it.</p></body></html>`;
}
