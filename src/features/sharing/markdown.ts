import type { HLJSApi } from 'highlight.js';
import { Marked, type Tokens } from 'marked';

/**
 * Markdown of the share page: the same tokenizer as the terminal client and the web console
 * (marked), code highlighted by highlight.js (its `hljs-*` classes; the page's stylesheet colours
 * them). Model text is untrusted and the page runs no script, so safety is in the renderer:
 * raw HTML is shown as text, links keep only http(s), mailto and in-page targets and open with
 * rel=noopener, and markdown images become links (opening a share page fetches nothing from
 * elsewhere). Text, code and titles are escaped by marked and highlight.js.
 */

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESC[c]);

/** Automatic language detection costs a pass per grammar: only for blocks up to this size. */
const AUTO_DETECT_CHARS = 4000;

/** An href the page may link to, or null. marked has percent-encoded it already. */
function safeHref(href: string): string | null {
  const h = href.trim();
  if (/^(https?:|mailto:)/i.test(h) || h.startsWith('#')) return h;
  return null;
}

function highlight(hljs: HLJSApi, code: string, lang: string): string {
  if (lang && hljs.getLanguage(lang)) return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
  if (!lang && code.length <= AUTO_DETECT_CHARS) return hljs.highlightAuto(code).value;
  return escapeHtml(code);
}

function markedFor(hljs: HLJSApi): Marked {
  return new Marked({
    gfm: true,
    breaks: false,
    renderer: {
      html: (token: Tokens.HTML | Tokens.Tag) => escapeHtml(token.text),
      code(token: Tokens.Code) {
        const lang = (token.lang ?? '').trim().split(/\s/)[0].toLowerCase();
        const cls = `hljs${lang ? ` language-${escapeHtml(lang)}` : ''}`;
        return `<pre class="code"><code class="${cls}">${highlight(hljs, token.text.replace(/\n$/, ''), lang)}</code></pre>\n`;
      },
      link(token: Tokens.Link) {
        const inner = this.parser.parseInline(token.tokens);
        const href = safeHref(token.href);
        if (!href) return inner;
        const title = token.title ? ` title="${escapeHtml(token.title)}"` : '';
        return `<a href="${escapeHtml(href)}"${title} target="_blank" rel="noopener noreferrer nofollow">${inner}</a>`;
      },
      image(token: Tokens.Image) {
        const alt = escapeHtml(token.text || 'image');
        const href = safeHref(token.href);
        return href ? `<a class="image-link" href="${escapeHtml(href)}" target="_blank" rel="noopener noreferrer nofollow">[image: ${alt}]</a>` : `[image: ${alt}]`;
      },
    },
  });
}

let loading: Promise<(text: string) => string> | null = null;

/**
 * The renderer, loaded on the first share page: highlight.js's common grammars take ~100 ms to
 * load, which the service's start does not need to pay.
 */
export function shareMarkdown(): Promise<(text: string) => string> {
  loading ??= import('highlight.js/lib/common').then(({ default: hljs }) => {
    const marked = markedFor(hljs);
    return (text: string) => marked.parse(text, { async: false });
  });
  return loading;
}
