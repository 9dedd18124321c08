import { ToolError, type Tool, type ToolContext } from '../types.js';
import { decodeEntities, stripTags } from './html-to-markdown.js';

/**
 * Web search through an operator-configured backend. The backends call URLs the operator set
 * (AGENTSVC_SEARCH_URL, or the providers' public APIs), never URLs chosen by the model, so they
 * use plain fetch rather than the SSRF guard: a SearXNG instance on the private network is the
 * normal setup, and the guard would refuse it.
 */

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface SearchOptions {
  signal?: AbortSignal;
  limit?: number;
  /** Only results from these domains (backends that can filter natively use it; the tool also post-filters). */
  allowedDomains?: string[];
  /** Never results from these domains. */
  blockedDomains?: string[];
}

export interface SearchBackend {
  readonly name: string;
  search(query: string, opts: SearchOptions): Promise<SearchResult[]>;
}

export interface SearchBackendConfig {
  backend?: 'searxng' | 'brave' | 'tavily';
  /** SearXNG: the instance's base URL (required). Brave/Tavily: overrides the API base URL. */
  url?: string;
  /** Brave/Tavily API key. */
  apiKey?: string;
  /** Bound on one backend request (default 15 s). */
  timeoutMs?: number;
}

export const BRAVE_API_BASE = 'https://api.search.brave.com';
export const TAVILY_API_BASE = 'https://api.tavily.com';
const DEFAULT_LIMIT = 10;
const DEFAULT_TIMEOUT_MS = 15_000;

function joinUrl(base: string, path: string): URL {
  return new URL(base.replace(/\/+$/, '') + path);
}

/** HTML (Brave's <strong> highlights) and entities out, whitespace collapsed, length bounded. */
export function cleanSnippet(s: unknown, max = 500): string {
  const text = decodeEntities(stripTags(String(s ?? ''))).replace(/\s+/g, ' ').trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A domain as the model may write it ("https://www.x.com/docs", "*.x.com") → "x.com"-style host. */
export function normalizeDomain(d: string): string {
  let s = d.trim().toLowerCase();
  s = s.replace(/^[a-z][a-z0-9+.-]*:\/\//, '').replace(/[/?#].*$/, '').replace(/:\d+$/, '').replace(/^\*\./, '').replace(/\.$/, '');
  return s;
}

export function hostMatches(url: string, domain: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  const d = normalizeDomain(domain);
  return !!d && (host === d || host.endsWith(`.${d}`));
}

/** `site:` operators for engines that understand them (Brave, and most engines behind SearXNG). */
function withSiteOperators(query: string, opts: SearchOptions): string {
  const allowed = (opts.allowedDomains ?? []).map(normalizeDomain).filter(Boolean);
  const blocked = (opts.blockedDomains ?? []).map(normalizeDomain).filter(Boolean);
  const parts = [query];
  if (allowed.length === 1) parts.push(`site:${allowed[0]}`);
  else if (allowed.length > 1) parts.push(`(${allowed.map((d) => `site:${d}`).join(' OR ')})`);
  for (const d of blocked) parts.push(`-site:${d}`);
  return parts.join(' ');
}

/** The parts of the backends' JSON answers we read (SearXNG and Tavily: results; Brave: web.results). */
type SearchJson = { results?: unknown; web?: { results?: unknown } } | null;

async function requestJson(backend: string, url: URL, init: RequestInit, signal: AbortSignal | undefined, timeoutMs: number): Promise<SearchJson> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: combined });
  } catch (e) {
    if (signal?.aborted) throw e;
    if (timeout.aborted) throw new ToolError(`search backend ${backend} timed out after ${Math.round(timeoutMs / 1000)} s`);
    throw new ToolError(`search backend ${backend} is unreachable: ${e?.cause?.code ?? e?.message ?? e}`);
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) {
    // The body often says why (quota, bad key, disabled JSON format); no key is echoed back here.
    const detail = cleanSnippet(text, 200);
    throw new ToolError(`search backend ${backend} answered HTTP ${res.status}${detail ? `: ${detail}` : ''}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ToolError(`search backend ${backend} returned a response that is not JSON${backend === 'searxng' ? ' (is format=json enabled in the instance settings?)' : ''}`);
  }
}

function toResults(items: unknown, snippetKey: string): SearchResult[] {
  if (!Array.isArray(items)) return [];
  return items
    .filter((r): r is Record<string, unknown> => !!r && typeof r === 'object' && typeof (r as { url?: unknown }).url === 'string')
    .map((r) => ({ title: cleanSnippet(r.title, 200) || String(r.url), url: String(r.url), snippet: cleanSnippet(r[snippetKey]) }));
}

/** SearXNG JSON API: GET {base}/search?q=...&format=json (JSON output must be enabled on the instance). */
export function searxngBackend(baseUrl: string, timeoutMs = DEFAULT_TIMEOUT_MS): SearchBackend {
  return {
    name: 'searxng',
    async search(query, opts) {
      const url = joinUrl(baseUrl, '/search');
      url.searchParams.set('q', withSiteOperators(query, opts));
      url.searchParams.set('format', 'json');
      const data = await requestJson('searxng', url, { headers: { accept: 'application/json' } }, opts.signal, timeoutMs);
      return toResults(data?.results, 'content').slice(0, opts.limit ?? DEFAULT_LIMIT);
    },
  };
}

/** Brave Search API: GET /res/v1/web/search?q=...&count=N, key in X-Subscription-Token. */
export function braveBackend(apiKey: string, baseUrl = BRAVE_API_BASE, timeoutMs = DEFAULT_TIMEOUT_MS): SearchBackend {
  return {
    name: 'brave',
    async search(query, opts) {
      const limit = opts.limit ?? DEFAULT_LIMIT;
      const url = joinUrl(baseUrl, '/res/v1/web/search');
      url.searchParams.set('q', withSiteOperators(query, opts));
      url.searchParams.set('count', String(Math.min(Math.max(limit, 1), 20))); // API maximum is 20
      const data = await requestJson('brave', url, { headers: { accept: 'application/json', 'x-subscription-token': apiKey } }, opts.signal, timeoutMs);
      return toResults(data?.web?.results, 'description').slice(0, limit);
    },
  };
}

/** Tavily: POST /search with a JSON body; filters domains natively. */
export function tavilyBackend(apiKey: string, baseUrl = TAVILY_API_BASE, timeoutMs = DEFAULT_TIMEOUT_MS): SearchBackend {
  return {
    name: 'tavily',
    async search(query, opts) {
      const limit = opts.limit ?? DEFAULT_LIMIT;
      const body: Record<string, unknown> = {
        query,
        max_results: Math.min(Math.max(limit, 1), 20),
        // Current API takes the Bearer header; older deployments and compatible servers read api_key.
        api_key: apiKey,
      };
      if (opts.allowedDomains?.length) body.include_domains = opts.allowedDomains.map(normalizeDomain);
      if (opts.blockedDomains?.length) body.exclude_domains = opts.blockedDomains.map(normalizeDomain);
      const data = await requestJson('tavily', joinUrl(baseUrl, '/search'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify(body),
      }, opts.signal, timeoutMs);
      return toResults(data?.results, 'content').slice(0, limit);
    },
  };
}

/**
 * The configured backend, or null when search is not configured (the WebSearch tool is then not
 * offered). A half-configured backend throws: that is an operator mistake to surface at startup.
 */
export function createSearchBackend(cfg: SearchBackendConfig): SearchBackend | null {
  const timeoutMs = cfg.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  switch (cfg.backend) {
    case undefined:
      return null;
    case 'searxng':
      if (!cfg.url) throw new Error('search backend searxng needs a URL (AGENTSVC_SEARCH_URL)');
      return searxngBackend(cfg.url, timeoutMs);
    case 'brave':
      if (!cfg.apiKey) throw new Error('search backend brave needs an API key (AGENTSVC_SEARCH_API_KEY)');
      return braveBackend(cfg.apiKey, cfg.url || BRAVE_API_BASE, timeoutMs);
    case 'tavily':
      if (!cfg.apiKey) throw new Error('search backend tavily needs an API key (AGENTSVC_SEARCH_API_KEY)');
      return tavilyBackend(cfg.apiKey, cfg.url || TAVILY_API_BASE, timeoutMs);
    default:
      throw new Error(`unknown search backend ${String(cfg.backend)}`);
  }
}

export interface WebSearchArgs {
  query: string;
  allowed_domains?: string[];
  blocked_domains?: string[];
}

export interface WebSearchOptions {
  /** Results listed (default 10). */
  limit?: number;
}

const DESCRIPTION = [
  'Searches the web and returns a numbered list of results (title, URL, snippet).',
  '- Use it for current information, documentation and facts beyond your knowledge; then open the most relevant results with WebFetch.',
  '- allowed_domains limits results to those domains (and their subdomains); blocked_domains removes those domains.',
  '- Cite the URLs of results you rely on.',
].join('\n');

function escapeLinkText(s: string): string {
  return s.replace(/[[\]]/g, (c) => `\\${c}`);
}

export function formatResults(query: string, results: SearchResult[]): string {
  if (!results.length) return `No results for "${query}".`;
  const lines = results.map((r, i) => {
    const head = `${i + 1}. [${escapeLinkText(r.title)}](${r.url.replace(/[()\s]/g, (c) => encodeURIComponent(c))})`;
    return r.snippet ? `${head}\n   ${r.snippet}` : head;
  });
  return `Search results for "${query}":\n\n${lines.join('\n')}`;
}

export function createWebSearchTool(backend: SearchBackend, opts: WebSearchOptions = {}): Tool<WebSearchArgs> {
  const limit = opts.limit ?? DEFAULT_LIMIT;
  return {
    name: 'WebSearch',
    displayName: 'Web search',
    description: DESCRIPTION,
    provider: 'search',
    parallel: true,
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 2, description: 'The search query' },
        allowed_domains: { type: 'array', items: { type: 'string' }, description: 'Only include results from these domains' },
        blocked_domains: { type: 'array', items: { type: 'string' }, description: 'Never include results from these domains' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    async execute(args: WebSearchArgs, ctx: ToolContext) {
      const query = typeof args?.query === 'string' ? args.query.trim() : '';
      if (query.length < 2) throw new ToolError('query must be at least 2 characters');
      const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && !!normalizeDomain(x)) : []);
      const allowed = strings(args.allowed_domains);
      const blocked = strings(args.blocked_domains);
      ctx.progress?.(`Searching ${backend.name} for "${query}"`);
      let results: SearchResult[];
      try {
        // Ask for more when filtering, since the post-filter below may drop some.
        const want = allowed.length || blocked.length ? Math.min(limit * 2, 20) : limit;
        results = await backend.search(query, { signal: ctx.signal, limit: want, allowedDomains: allowed, blockedDomains: blocked });
      } catch (e) {
        if (e instanceof ToolError || ctx.signal?.aborted) throw e;
        throw new ToolError(`search failed: ${e instanceof Error ? e.message : String(e)}`);
      }
      // Backends do not all honour site: operators, so enforce the filters here as well.
      const seen = new Set<string>();
      const filtered = results.filter((r) => {
        if (seen.has(r.url)) return false;
        seen.add(r.url);
        if (allowed.length && !allowed.some((d) => hostMatches(r.url, d))) return false;
        return !blocked.some((d) => hostMatches(r.url, d));
      });
      return formatResults(query, filtered.slice(0, limit));
    },
  };
}
