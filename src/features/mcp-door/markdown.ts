import type { Turn } from '../../core/conversation/turns.js';

/** Past this, a tool call's arguments or result is cut in the markdown (the messages tool has it whole). */
const CUT = 2000;
const cut = (s: string) => (s.length > CUT ? `${s.slice(0, CUT)}\n... (${s.length - CUT} more characters)` : s);

/**
 * A session's conversation as markdown (the `session://{session_id}` resource): each turn under a
 * heading of its role, sub-agent turns marked as such, its text, then its tool calls with their
 * status, arguments and result.
 */
export function conversationMarkdown(intent: string, turns: Turn[]): string {
  const out: string[] = [`# ${intent.trim() || 'Session'}`];
  for (const t of turns) {
    if (t.deprecated) continue;
    const who = t.kind === 'compaction' ? 'Summary of earlier turns' : t.role === 'user' ? 'User' : t.role === 'assistant' ? 'Assistant' : 'System';
    out.push(`## ${who}${t.loop_id !== 'root' ? ' (sub-agent)' : ''}`);
    const text =
      t.kind === 'compaction'
        ? (t.summary_full ?? '')
        : t.blocks
            .filter((b) => b.type === 'text')
            .map((b) => b.content)
            .join('');
    if (text.trim()) out.push(text);
    for (const b of t.blocks) if (b.type === 'image') out.push(`![image](${b.content.startsWith('data:') ? 'data URL' : b.content})`);
    for (const c of t.tool_calls) {
      out.push(`**${c.display_name || c.tool_name}** (${c.status})\n\n\`\`\`json\n${cut(c.arguments)}\n\`\`\``);
      if (c.result !== null) out.push(`\`\`\`\n${cut(c.result)}\n\`\`\``);
    }
  }
  return `${out.join('\n\n')}\n`;
}
