// The web tools of the agent: WebFetch (SSRF-guarded fetch + model answer) and WebSearch.
export { isBlockedAddress, parseIPv6 } from './address.js';
export {
  checkTarget, DEFAULT_MAX_BYTES, DEFAULT_MAX_REDIRECTS, DEFAULT_TIMEOUT_MS, FetchError, parseHttpUrl, safeFetch, SsrfError, systemResolver,
  type AddressPolicy, type FetchErrorCode, type ResolvedAddress, type Resolver, type SafeFetchOptions, type SafeFetchResult,
} from './safe-fetch.js';
export { decodeEntities, htmlToMarkdown, toMarkdown, type ContentKind, type ConvertedContent } from './html-to-markdown.js';
export { createWebFetchTool, DEFAULT_MAX_CONTENT_CHARS, type WebFetchArgs, type WebFetchConfig } from './webfetch.js';
export {
  braveBackend, createSearchBackend, createWebSearchTool, formatResults, searxngBackend, tavilyBackend,
  type SearchBackend, type SearchBackendConfig, type SearchOptions, type SearchResult, type WebSearchArgs, type WebSearchOptions,
} from './search.js';
