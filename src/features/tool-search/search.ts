import MiniSearch from 'minisearch';
import type { ModelMessage } from '../../core/models/port.js';
import type { RunInfo } from '../../core/engine/run-info.js';
import { countTokens } from '../../core/models/tokenizer.js';
import { ToolRegistry } from '../../core/tools/registry.js';
import { type Tool, ToolError } from '../../core/tools/types.js';

/** No model request carries more tools than this (OpenAI's limit; the strictest of the APIs). */
export const MAX_TOOLS_PER_REQUEST = 128;
/** Share of the context window the tools' definitions may take before they are searched instead. */
export const CONTEXT_SHARE = 0.1;
/** Tools the session called lately, offered directly (most recent first). */
const RECENT = 10;
const SEARCH_MAX = 20;
const SEARCH_DEFAULT = 5;
/** Search indexes kept at once (one per distinct set of deferred tools: installs have few). */
const INDEXES = 4;

export const TOOL_SEARCH = 'ToolSearch';

/** Abbreviations API names use for the words their summaries spell out. */
const SHORT: Record<string, string> = { repo: 'repository', org: 'organization', pr: 'pull', auth: 'authentication', config: 'configuration', env: 'environment' };
/** Words too common to rank by. */
const STOP = new Set(['a', 'an', 'the', 'of', 'for', 'to', 'in', 'on', 'by', 'and', 'or', 'with', 'from', 'is', 'are', 'be', 'this', 'that']);

/** Tools that wait to be found: the providers that can bring hundreds (MCP servers, integrations). */
const deferrable = (t: Tool) => t.provider === 'mcp' || t.provider === 'integration';

interface RunTools {
  runId: string;
  info: RunInfo;
  /** Deferred tools by name, as the last model call listed them. */
  deferred: Map<string, Tool>;
  /** Names found by ToolSearch in this run, oldest first. */
  found: string[];
  index: MiniSearch;
  tool: Tool;
  told: boolean;
}

/** Words of a tool name: `api__github__repos_list-for-org` and `listPets` both split into words. */
const words = (s: string) =>
  s
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_\-./]+/g, ' ')
    .toLowerCase();

/**
 * Tool search (docs/tool-search.md): when a loop's tools pass the direct maximum or a share of the
 * context window, a model call is offered the built-in tools, the session's recently called tools,
 * the tools found in this run and `ToolSearch`, which ranks the others with MiniSearch (BM25+ over
 * names, descriptions and parameter names) and makes what it answers callable for the rest of the run.
 */
export class ToolSearch {
  /** The run in flight of each session (one at a time): ToolSearch's calls find their run by session. */
  private runs = new Map<string, RunTools>();
  private indexes = new Map<string, MiniSearch>();
  /** Tokens of a tool's definition, and its parameter names: computed once per tool object. */
  private tokens = new WeakMap<Tool, number>();
  private params = new WeakMap<Tool, string>();

  constructor(private readonly opts: { directMax: number; contextWindow: (model: string) => number }) {}

  /** Whether these tools are offered as they are: few enough, and small enough for the context window. */
  direct(tools: Tool[], model: string): boolean {
    if (tools.length > this.opts.directMax) return false;
    let sum = 0;
    for (const t of tools) {
      let n = this.tokens.get(t);
      if (n === undefined) this.tokens.set(t, (n = countTokens(JSON.stringify(ToolRegistry.specs([t])[0]))));
      sum += n;
    }
    return sum <= this.opts.contextWindow(model) * CONTEXT_SHARE;
  }

  /** The `model.tools` step: the tools of this model call, or undefined for the loop's own. */
  choose(p: { run: { info: RunInfo; model: string }; loopId: string; messages: ModelMessage[]; tools: Tool[] }): Tool[] | undefined {
    if (this.direct(p.tools, p.run.model)) return undefined;
    const state = this.state(p.run.info, p.tools.filter(deferrable));
    const offered = this.offer(p.tools, state.deferred, state.tool, p.messages, state.found);
    if (!state.told) {
      state.told = true;
      const direct = p.tools.filter((t) => !deferrable(t)).length;
      p.run.info.notice('TOOLS_DEFERRED', `${state.deferred.size} tools are offered through ToolSearch`, { deferred: state.deferred.size, direct });
    }
    return offered;
  }

  /**
   * The `model.tools.preview` step (context statistics): the tools the session's next model call
   * would offer, chosen as `choose` chooses (the run in flight's found tools included), without
   * touching any run; undefined when every tool would be offered.
   */
  preview(p: { sessionId: string; model: string; messages: ModelMessage[]; tools: Tool[] }): Tool[] | undefined {
    if (this.direct(p.tools, p.model)) return undefined;
    const deferred = p.tools.filter(deferrable);
    const tool = this.tool(p.sessionId);
    tool.description = toolDescription(deferred.length);
    return this.offer(p.tools, new Map(deferred.map((t) => [t.name, t])), tool, p.messages, this.runs.get(p.sessionId)?.found ?? []);
  }

  /**
   * A searched call's tools: the direct ones, ToolSearch, the recently called deferred tools, then
   * those found (newest first); past the room, the oldest found ones wait to be found again.
   */
  private offer(tools: Tool[], deferred: Map<string, Tool>, search: Tool, messages: ModelMessage[], found: string[]): Tool[] {
    const direct = tools.filter((t) => !deferrable(t));
    const room = Math.max(0, MAX_TOOLS_PER_REQUEST - direct.length - 1);
    const extra: Tool[] = [];
    const add = (name: string) => {
      const t = deferred.get(name);
      if (t && !extra.includes(t)) extra.push(t);
    };
    for (const name of recentCalls(messages).slice(0, RECENT)) add(name);
    for (const name of [...found].reverse()) add(name);
    return [...direct, search, ...extra.slice(0, room)].slice(0, MAX_TOOLS_PER_REQUEST);
  }

  /** The run's state, its deferred tools brought up to date with this model call's listing. */
  private state(info: RunInfo, deferred: Tool[]): RunTools {
    let s = this.runs.get(info.sessionId);
    if (!s || s.runId !== info.runId) {
      s = { runId: info.runId, info, deferred: new Map(), found: [], index: this.index(deferred), tool: this.tool(info.sessionId), told: false };
      this.runs.set(info.sessionId, s);
    } else s.index = this.index(deferred);
    s.deferred = new Map(deferred.map((t) => [t.name, t]));
    s.tool.description = toolDescription(deferred.length);
    return s;
  }

  /** A run ended: its found tools are forgotten. */
  forget(info: RunInfo): void {
    if (this.runs.get(info.sessionId)?.runId === info.runId) this.runs.delete(info.sessionId);
  }

  /** The index of these tools, built once per distinct set (by name). */
  private index(tools: Tool[]): MiniSearch {
    const key = tools.map((t) => t.name).join('\n');
    const hit = this.indexes.get(key);
    if (hit) {
      this.indexes.delete(key);
      this.indexes.set(key, hit);
      return hit;
    }
    // A tool's first line (an operation's summary) says what it does; the rest is detail.
    const index = new MiniSearch<{ id: string; name: string; title: string; description: string; params: string }>({
      fields: ['name', 'title', 'description', 'params'],
      storeFields: [],
      processTerm: term,
      searchOptions: { boost: { name: 2, title: 4, description: 0.5, params: 1 }, prefix: (term) => term.length > 3, fuzzy: 0.1, combineWith: 'OR' },
    });
    index.addAll(tools.map((t) => ({ id: t.name, name: words(t.name), title: firstLine(t.description), description: t.description, params: this.paramNames(t) })));
    this.indexes.set(key, index);
    if (this.indexes.size > INDEXES) this.indexes.delete(this.indexes.keys().next().value as string);
    return index;
  }

  private paramNames(t: Tool): string {
    let s = this.params.get(t);
    if (s === undefined) {
      const props = (t.parameters as { properties?: Record<string, unknown> }).properties;
      s = props && typeof props === 'object' ? Object.keys(props).map(words).join(' ') : '';
      this.params.set(t, s);
    }
    return s;
  }

  /** ToolSearch: one per run, its description saying how many tools wait. */
  private tool(sessionId: string): Tool<{ query: string; limit?: number }> {
    return {
      name: TOOL_SEARCH,
      description: toolDescription(0),
      provider: 'builtin',
      parallel: true,
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', minLength: 1, maxLength: 500, description: 'What the tool should do, in a few words, or exact tool names separated by spaces' },
          limit: { type: 'integer', minimum: 1, maximum: SEARCH_MAX, description: `How many tools to answer (default ${SEARCH_DEFAULT})` },
        },
        required: ['query'],
        additionalProperties: false,
      },
      execute: async ({ query, limit }) => {
        const s = this.runs.get(sessionId);
        if (!s) throw new ToolError('there are no other tools to search in this run');
        return this.search(s, query, limit ?? SEARCH_DEFAULT);
      },
    };
  }

  /** Rank, remember what was found for the rest of the run, tell the session's clients. */
  search(s: RunTools, query: string, limit: number): string {
    const asked = query.split(/[\s,]+/).filter(Boolean);
    const exact = asked.filter((q) => s.deferred.has(q));
    // A query of tool names only answers those; else names first, then the ranking.
    const ranked = exact.length === asked.length ? [] : s.index.search(query).map((r) => String(r.id));
    const names = [...new Set([...exact, ...ranked])].filter((n) => s.deferred.has(n)).slice(0, limit);
    for (const n of names) {
      const at = s.found.indexOf(n);
      if (at >= 0) s.found.splice(at, 1);
      s.found.push(n);
    }
    s.info.notice('TOOL_SEARCH', `ToolSearch "${query.slice(0, 100)}": ${names.length} tool(s) found`, { query: query.slice(0, 500), tools: names });
    if (!names.length) return `No tool matches "${query}". Try other words (what the tool does, or a parameter it takes).`;
    const lines = names.map((n) => {
      const t = s.deferred.get(n)!;
      const params = this.paramNames(t);
      return `- ${n}: ${firstLine(t.description).slice(0, 300)}${params ? ` (parameters: ${params})` : ''}`;
    });
    return `${names.length} tool(s) found; they can be called from now on in this run:\n${lines.join('\n')}`;
  }
}

/** A word as indexed and searched: lower case, plurals as singulars (`repositories`, `repository`), common words left out. */
function term(word: string): string | null {
  const w = word.toLowerCase();
  if (STOP.has(w)) return null;
  const one = w.length > 3 ? w.replace(/ies$/, 'y').replace(/([^su])s$/, '$1') : w;
  return SHORT[one] ?? one;
}

/** A description's first line or sentence (an operation's summary comes before ` - `). */
const firstLine = (d: string) => d.split(/\n| - |\. /)[0].trim();

function toolDescription(deferred: number): string {
  return `Search the ${deferred || 'other'} tools that are not listed (integrations' API operations, MCP servers' tools) by what they do; the tools it answers can be called from then on. Use it whenever no listed tool fits the task.`;
}

/** Names of the tools called in these messages, most recent first, once each. */
export function recentCalls(messages: ModelMessage[]): string[] {
  const out: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role !== 'assistant' || !m.tool_calls) continue;
    for (const c of m.tool_calls) if (c.name !== TOOL_SEARCH && !out.includes(c.name)) out.push(c.name);
  }
  return out;
}

/** For the bench: the payload one model call carries. */
export function payloadOf(tools: Tool[]): { count: number; bytes: number } {
  return { count: tools.length, bytes: Buffer.byteLength(JSON.stringify(ToolRegistry.specs(tools))) };
}
