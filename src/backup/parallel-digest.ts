/**
 * The backup's running checksum (archive.ts EntryDigest: the same bytes in the same order) computed
 * on a worker thread. sha256 of 1 GiB costs about 0.6 s of CPU, as long as reading and writing it:
 * on the main thread it ran in series with the I/O and made the backup twice the disk's time.
 * Written here because no library hashes a stream off the main thread. File content is moved to
 * the worker and back (ArrayBuffer transfer, no copy) while the chunks before it are written; the
 * rest (names, table pieces) is copied to it. Hashing follows the order of the calls.
 */
import { Worker } from 'node:worker_threads';

/** Copied bytes the worker may lag behind before `room()` waits. */
const MAX_BEHIND = 32 * 1024 * 1024;

const WORKER = `
const { parentPort } = require('node:worker_threads');
const hash = require('node:crypto').createHash('sha256');
parentPort.on('message', (m) => {
  if (m.text !== undefined) hash.update(m.text);
  if (m.copy) {
    hash.update(m.copy);
    parentPort.postMessage({ copied: m.copy.byteLength });
  }
  if (m.moved) {
    hash.update(m.moved);
    parentPort.postMessage({ moved: m.moved }, [m.moved.buffer]);
  }
  if (m.digest) parentPort.postMessage({ digest: hash.copy().digest('hex') });
});`;

type Waiter<T> = { resolve: (v: T) => void; reject: (e: Error) => void };

export class ParallelDigest {
  entries = 0;
  bytes = 0;
  private readonly worker = new Worker(WORKER, { eval: true });
  private behind = 0;
  private failed: Error | null = null;
  private room$: Waiter<void> | null = null;
  private digest$: Waiter<string> | null = null;
  /** Moved chunks on their way back, in the order they were sent (the worker answers in order). */
  private readonly moved: Waiter<Uint8Array>[] = [];

  constructor() {
    this.worker.unref();
    this.worker.on('message', (m: { copied?: number; moved?: Uint8Array; digest?: string }) => {
      if (m.copied !== undefined) {
        this.behind -= m.copied;
        if (this.room$ && this.behind < MAX_BEHIND) {
          this.room$.resolve();
          this.room$ = null;
        }
      }
      if (m.moved) this.moved.shift()?.resolve(m.moved);
      if (m.digest !== undefined) this.digest$?.resolve(m.digest);
    });
    this.worker.on('error', (e) => this.fail(e));
    this.worker.on('exit', () => this.fail(new Error('the checksum worker stopped')));
  }

  begin(name: string, type: string, linkname = ''): void {
    this.entries++;
    this.worker.postMessage({ text: `${name}\0${type}\0${linkname}\0` });
  }

  /** Hashes a copy of `chunk`; see room(). */
  data(chunk: Uint8Array): void {
    this.bytes += chunk.byteLength;
    this.behind += chunk.byteLength;
    this.worker.postMessage({ copy: chunk });
  }

  /**
   * Hashes `chunk` without a copy: its memory moves to the worker and comes back in the answer.
   * `chunk` must own its whole ArrayBuffer (not a pooled Buffer) and is unusable meanwhile.
   */
  move(chunk: Uint8Array): Promise<Uint8Array> {
    if (this.failed) return Promise.reject(this.failed);
    this.bytes += chunk.byteLength;
    return new Promise((resolve, reject) => {
      this.moved.push({ resolve, reject });
      this.worker.postMessage({ moved: chunk }, [chunk.buffer as ArrayBuffer]);
    });
  }

  /** Resolves once the worker is at most MAX_BEHIND copied bytes behind (backpressure). */
  room(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.behind < MAX_BEHIND) return Promise.resolve();
    return new Promise((resolve, reject) => (this.room$ = { resolve, reject }));
  }

  digest(): Promise<string> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      this.digest$ = { resolve, reject };
      this.worker.postMessage({ digest: true });
    });
  }

  async close(): Promise<void> {
    this.fail(new Error('the checksum is closed'));
    await this.worker.terminate();
  }

  private fail(e: Error): void {
    if (this.failed) return;
    this.failed = e;
    this.room$?.reject(e);
    this.digest$?.reject(e);
    for (const w of this.moved.splice(0)) w.reject(e);
  }
}
