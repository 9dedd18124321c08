import { Worker } from 'node:worker_threads';
import { type Filters, OpenApiError, type ParsedDocument } from './openapi.js';

// Built code runs load-worker.js; from sources (tests, bench) the .ts file through tsx.
const FROM_SOURCES = import.meta.url.endsWith('.ts');
const WORKER = new URL(FROM_SOURCES ? './load-worker.ts' : './load-worker.js', import.meta.url);
// Workers do not inherit the parent's module loader, so from sources tsx is registered first.
const BOOT = FROM_SOURCES
  ? `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => m.register()).then(() => import(${JSON.stringify(WORKER.href)}))`
  : `import(${JSON.stringify(WORKER.href)})`;

/** Heap the worker may use: GitHub's description (13 MB of JSON, 1,223 operations) needs about 600 MB. */
const MAX_HEAP_MB = 1024;

/**
 * parseOpenApi in a worker thread: reading, validating and dereferencing a large document takes
 * seconds and hundreds of MB that would stay with the service's heap; the worker's heap is released
 * when it exits, and the service keeps only what the operations offered need (docs/integrations.md).
 */
export function parseOffThread(input: string | Record<string, unknown>, filters: Filters, signal?: AbortSignal): Promise<ParsedDocument> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new OpenApiError('stopped before it was read'));
    const worker = new Worker(BOOT, { eval: true, execArgv: [], workerData: { input, filters }, resourceLimits: { maxOldGenerationSizeMb: MAX_HEAP_MB } });
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      void worker.terminate();
      fn();
    };
    worker.once('message', (m: { ok: true; doc: ParsedDocument } | { ok: false; error: string }) => finish(() => (m.ok ? resolve(m.doc) : reject(new OpenApiError(m.error)))));
    worker.once('error', (e) => finish(() => reject(new OpenApiError(`reading the document failed: ${e.message}`))));
    worker.once('exit', (code) => finish(() => reject(new OpenApiError(`reading the document stopped (exit ${code})`))));
    // The service stopping: the worker goes with it (it would keep the process alive for seconds).
    signal?.addEventListener('abort', () => finish(() => reject(new OpenApiError('stopped before it was read'))), { once: true });
  });
}
