import { Worker } from 'node:worker_threads';
import { contentKind, decodeEntities, extractTitle, stripTags, toMarkdown, type ConvertedContent } from './html-to-markdown.js';

/** Time the worker gets for one page before the plain-text fallback is used. */
export const CONVERT_LIMITS = { timeoutMs: 10_000, maxHeapMb: 512 };

// Built code runs convert-worker.js; from sources (tests, bench) the .ts file through tsx.
const FROM_SOURCES = import.meta.url.endsWith('.ts');
const WORKER = new URL(FROM_SOURCES ? './convert-worker.ts' : './convert-worker.js', import.meta.url);
// Workers do not inherit the parent's module loader, so from sources tsx is registered first.
const BOOT = FROM_SOURCES
  ? `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => m.register()).then(() => import(${JSON.stringify(WORKER.href)}))`
  : `import(${JSON.stringify(WORKER.href)})`;

/** Linear last resort: the page's text without markup. */
function plainText(body: Buffer, note: string): ConvertedContent {
  const html = body.toString('utf8');
  const title = extractTitle(html);
  const text = decodeEntities(stripTags(html))
    .replace(/[ \t]+/g, ' ')
    .replace(/\s*\n\s*/g, '\n')
    .trim();
  return { kind: 'html', title, markdown: `${title ? `Title: ${title}\n\n` : ''}[${note}; this is its text without markup.]\n\n${text}` };
}

/**
 * toMarkdown, off the event loop for HTML: runs in a worker thread that is terminated after
 * CONVERT_LIMITS.timeoutMs; then (or if it fails, e.g. a stack overflow) the page's plain text is
 * used instead. Text and binary bodies need no parsing and are converted in place.
 */
export async function convertOffThread(body: Buffer, contentType: string, url: string, signal?: AbortSignal): Promise<ConvertedContent> {
  if (contentKind(body, contentType) !== 'html') return toMarkdown(body, contentType, url);
  return new Promise((resolve, reject) => {
    const worker = new Worker(BOOT, { eval: true, execArgv: [], workerData: { body, contentType, url }, resourceLimits: { maxOldGenerationSizeMb: CONVERT_LIMITS.maxHeapMb } });
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
      fn();
    };
    const timer = setTimeout(
      () => finish(() => resolve(plainText(body, `The page could not be converted to Markdown within ${CONVERT_LIMITS.timeoutMs / 1000} s`))),
      CONVERT_LIMITS.timeoutMs,
    );
    const onAbort = () => finish(() => reject(signal!.reason));
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (m: ConvertedContent) => finish(() => resolve(m)));
    worker.once('error', (e) => finish(() => resolve(plainText(body, `The page could not be converted to Markdown (${e.message})`))));
    worker.once('exit', () => finish(() => resolve(plainText(body, 'The page could not be converted to Markdown'))));
  });
}
