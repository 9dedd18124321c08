import { Worker } from 'node:worker_threads';
import { type Counted, type CountJob, count, sizeOf } from './count.js';

/**
 * Jobs up to this many characters are counted in the request's thread: about 0.4 µs a character
 * on hostile text (long words), so at most ~7 ms of event loop, less than handing it over costs.
 */
export const INLINE_CHARS = 16_384;

// Built code runs worker.js; from sources (tests, bench) the .ts file through tsx.
const FROM_SOURCES = import.meta.url.endsWith('.ts');
const WORKER = new URL(FROM_SOURCES ? './worker.ts' : './worker.js', import.meta.url);
// Workers do not inherit the parent's module loader, so from sources tsx is registered first.
const BOOT = FROM_SOURCES
  ? `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => m.register()).then(() => import(${JSON.stringify(WORKER.href)}))`
  : `import(${JSON.stringify(WORKER.href)})`;

type Pending = { resolve: (c: Counted) => void; reject: (e: Error) => void };

/**
 * Counts tokens without blocking the event loop: small jobs at once, large ones in one worker
 * thread, started at the first large job and kept (its rank table costs ~7 MB and a moment to
 * build), queued in order. A worker that dies fails the jobs it held; the next job starts another.
 */
export class TokenCounter {
  private worker: Worker | null = null;
  private pending = new Map<number, Pending>();
  private next = 0;

  async count(job: CountJob): Promise<Counted> {
    if (sizeOf(job) <= INLINE_CHARS) return count(job);
    const w = this.worker ?? this.start();
    const id = ++this.next;
    return new Promise<Counted>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      w.postMessage({ id, job });
    });
  }

  private start(): Worker {
    const w = new Worker(BOOT, { eval: true, execArgv: [] });
    // The requests waiting for it keep the process up; an idle worker must not.
    w.unref();
    w.on('message', (m: { id: number; counted?: Counted; error?: string }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.counted) p.resolve(m.counted);
      else p.reject(new Error(`token counting failed: ${m.error}`));
    });
    const died = (why: string) => {
      if (this.worker !== w) return;
      this.worker = null;
      for (const p of this.pending.values()) p.reject(new Error(`token counting failed: ${why}`));
      this.pending.clear();
    };
    w.on('error', (e) => died(e.message));
    w.on('exit', (code) => died(`the counting worker exited (${code})`));
    this.worker = w;
    return w;
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    await w?.terminate();
  }
}
