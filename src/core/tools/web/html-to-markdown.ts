import TurndownService from 'turndown';

/**
 * Fetched bodies → text the model can read. HTML becomes Markdown (far fewer tokens than markup,
 * and links survive); page chrome and executable content are dropped because they are noise at
 * best and prompt-injection carriers at worst.
 */

export type ContentKind = 'html' | 'text' | 'binary';

export interface ConvertedContent {
  kind: ContentKind;
  /** The page's <title>, for HTML. */
  title?: string;
  /** Markdown for HTML, the text itself for text types, a short note for binary types. */
  markdown: string;
}

const DROPPED = new Set(['script', 'style', 'nav', 'noscript', 'iframe', 'svg', 'head', 'title', 'template', 'object', 'embed', 'canvas']);

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  ndash: '–',
  mdash: '—',
  hellip: '…',
  copy: '©',
  reg: '®',
  trade: '™',
  laquo: '«',
  raquo: '»',
  middot: '·',
};

/** Enough entity decoding for titles and search snippets (turndown decodes the body itself). */
export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === '#') {
      const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m;
    }
    return NAMED_ENTITIES[e.toLowerCase()] ?? m;
  });
}

function absolute(href: string, baseUrl?: string): string | null {
  try {
    const u = new URL(href, baseUrl);
    // javascript:, data: and friends carry nothing the model can follow, only bulk or payloads.
    return u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'mailto:' ? u.href : null;
  } catch {
    return null;
  }
}

/** `<[^>]*>` removed, as a linear scan: the regex retries from every `<` when no `>` follows (quadratic). */
export function stripTags(s: string): string {
  let out = '';
  let i = 0;
  for (;;) {
    const lt = s.indexOf('<', i);
    const gt = lt < 0 ? -1 : s.indexOf('>', lt + 1);
    if (gt < 0) return out + s.slice(i);
    out += s.slice(i, lt);
    i = gt + 1;
  }
}

/** Longest raw title looked at; real titles are far shorter, junk ones are cut before any work on them. */
const MAX_TITLE_CHARS = 2000;

/**
 * The first `<title>`'s text. Found with fixed-string searches, each from where the last stopped:
 * the old `<title\b[^>]*>([\s\S]*?)<\/title\s*>` rescanned the rest of the page from every
 * `<title` without a close (an hour, by extrapolation, for a hostile 5 MB page).
 */
export function extractTitle(html: string): string | undefined {
  const open = /<title(?=[\s/>])/gi.exec(html);
  if (!open) return undefined;
  const start = html.indexOf('>', open.index + 6);
  if (start < 0) return undefined;
  const close = /<\/title\s*>/gi;
  close.lastIndex = start + 1;
  const end = close.exec(html);
  if (!end) return undefined;
  const raw = html.slice(start + 1, Math.min(end.index, start + 1 + MAX_TITLE_CHARS));
  const title = decodeEntities(stripTags(raw)).replace(/\s+/g, ' ').trim();
  return title || undefined;
}

/** HTML → Markdown, with relative links made absolute against `baseUrl` (the page's final URL). */
export function htmlToMarkdown(html: string, baseUrl?: string): { title?: string; markdown: string } {
  const td = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-', emDelimiter: '_' });
  td.remove((node) => DROPPED.has(node.nodeName.toLowerCase()));
  td.addRule('absoluteLinks', {
    filter: (node) => node.nodeName === 'A' && !!node.getAttribute('href'),
    replacement: (content, node) => {
      const text = content.trim();
      const href = absolute((node as HTMLElement).getAttribute('href') ?? '', baseUrl);
      if (!href) return text;
      if (!text) return '';
      return `[${text}](${href.replace(/[()]/g, (c) => encodeURIComponent(c))})`;
    },
  });
  td.addRule('images', {
    filter: 'img',
    replacement: (_content, node) => {
      const el = node as HTMLElement;
      const alt = (el.getAttribute('alt') ?? '').replace(/\s+/g, ' ').trim();
      const src = absolute(el.getAttribute('src') ?? '', baseUrl);
      // Inline data: images can be megabytes of base64; keep only what describes them.
      if (!src) return alt ? `[image: ${alt}]` : '';
      return `![${alt}](${src.replace(/[()]/g, (c) => encodeURIComponent(c))})`;
    },
  });
  const markdown = td
    .turndown(html)
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { title: extractTitle(html), markdown };
}

function mediaType(contentType: string): string {
  return contentType.split(';')[0].trim().toLowerCase();
}

function isHtmlType(type: string): boolean {
  return type === 'text/html' || type === 'application/xhtml+xml';
}

function isTextType(type: string): boolean {
  if (type.startsWith('text/')) return true;
  if (/\+(json|xml|yaml)$/.test(type)) return true;
  return [
    'application/json',
    'application/xml',
    'application/javascript',
    'application/x-javascript',
    'application/ecmascript',
    'application/yaml',
    'application/x-yaml',
    'application/toml',
    'application/x-ndjson',
    'application/graphql',
    'application/sql',
    'application/csv',
    'application/x-sh',
    'application/x-httpd-php',
    'application/rtf',
  ].includes(type);
}

/** Charset from the header, else from a <meta> near the top of an HTML page, else UTF-8. */
function charsetOf(contentType: string, body: Buffer, html: boolean): string {
  const fromHeader = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType)?.[1];
  if (fromHeader) return fromHeader;
  if (html) {
    const head = body.subarray(0, 2048).toString('latin1');
    const meta = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
    if (meta) return meta;
  }
  return 'utf-8';
}

// 0x80-0x9F of windows-1252, which WHATWG uses for every "latin1" label. Node 20's TextDecoder
// decodes that range as C1 controls, which loses the curly quotes and dashes old pages are full of.
const CP1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f, 0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
  0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
];

export function decodeText(body: Buffer, charset: string): string {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset);
  } catch {
    decoder = new TextDecoder('utf-8'); // unknown label: best effort beats failing
  }
  if (decoder.encoding !== 'windows-1252') return decoder.decode(body);
  let out = '';
  for (let i = 0; i < body.length; i += 8192) {
    const part = body.subarray(i, i + 8192);
    out += String.fromCharCode(...Array.from(part, (b) => (b >= 0x80 && b <= 0x9f ? CP1252_HIGH[b - 0x80] : b)));
  }
  return out;
}

/** Unlabelled or generic bodies: decide from the bytes whether they are text at all. */
function sniff(body: Buffer): ContentKind {
  const head = body.subarray(0, 4096);
  if (head.includes(0)) return 'binary';
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true });
  } catch {
    return 'binary';
  }
  return /^\s*(<!doctype html|<html[\s>]|<head[\s>]|<body[\s>])/i.test(head.toString('utf8')) ? 'html' : 'text';
}

function kindOf(type: string, body: Buffer): ContentKind {
  if (isHtmlType(type)) return 'html';
  if (isTextType(type)) return 'text';
  if (!type || type === 'application/octet-stream' || type === 'binary/octet-stream') return sniff(body);
  return 'binary';
}

/** What toMarkdown will treat the body as (HTML is the only kind that needs parsing). */
export function contentKind(body: Buffer, contentType: string): ContentKind {
  return kindOf(mediaType(contentType), body);
}

/**
 * Convert a fetched body by its content type. `url` resolves relative links. A body cut by the
 * size limit may end mid-character or mid-tag; both decoders and turndown tolerate that.
 */
export function toMarkdown(body: Buffer, contentType: string, url?: string): ConvertedContent {
  const type = mediaType(contentType);
  const kind = kindOf(type, body);
  if (kind === 'binary') {
    return { kind, markdown: `[Binary content (${type || 'unknown type'}, ${body.length} bytes) cannot be shown as text.]` };
  }
  const text = decodeText(body, charsetOf(contentType, body, kind === 'html'));
  if (kind === 'text') return { kind, markdown: text };
  const { title, markdown } = htmlToMarkdown(text, url);
  return { kind, title, markdown: title ? `Title: ${title}\n\n${markdown}` : markdown };
}
