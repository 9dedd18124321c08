import { newId } from '../../platform/lib/ids.js';
import type { Computer } from '../../../runners/types.js';
import { ToolError } from './types.js';

export interface BackgroundTask {
  id: string;
  session_id: string;
  command: string;
  description: string | null;
  status: 'running' | 'completed' | 'failed' | 'killed';
  exit_code: number | null;
  started_at: string;
  finished_at: string | null;
}

export interface BackgroundLimits {
  /** Running tasks per user (AGENTSVC_BACKGROUND_MAX_TASKS). */
  maxTasks: number;
  /** A task still running after this long is killed (AGENTSVC_BACKGROUND_MAX_MS). */
  maxLifetimeMs: number;
  /** Characters of output kept per task, the most recent ones (AGENTSVC_BACKGROUND_OUTPUT_BYTES). */
  outputBytes: number;
}

export const DEFAULT_BACKGROUND_LIMITS: BackgroundLimits = { maxTasks: 8, maxLifetimeMs: 4 * 3600_000, outputBytes: 1024 * 1024 };

/**
 * A task that has written this much is killed: output is not kept past `outputBytes` anyway, and
 * a producer like `cat /dev/zero` would otherwise keep a core of the service busy decoding it.
 */
export const OUTPUT_KILL_BYTES = 1024 ** 3;

/**
 * The last `cap` characters of a stream, plus totals. Chunks are dropped (or cut) from the front;
 * many small chunks are joined now and then so the array stays short. Memory stays near `cap`
 * whatever the producer writes, with or without newlines.
 */
export class OutputRing {
  private chunks: string[] = [];
  private kept = 0;
  totalBytes = 0;
  newlines = 0;

  constructor(private readonly cap: number) {}

  push(s: string) {
    this.totalBytes += Buffer.byteLength(s);
    for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) this.newlines++;
    if (s.length >= this.cap) {
      this.chunks = [s.slice(-this.cap)];
      this.kept = this.cap;
      return;
    }
    this.chunks.push(s);
    this.kept += s.length;
    while (this.kept > this.cap) {
      const excess = this.kept - this.cap;
      if (this.chunks[0].length <= excess) this.kept -= this.chunks.shift()!.length;
      else {
        this.chunks[0] = this.chunks[0].slice(excess);
        this.kept -= excess;
      }
    }
    if (this.chunks.length > 256) this.chunks = [this.chunks.join('')];
  }

  text(): string {
    return this.chunks.join('');
  }
}

interface Entry {
  task: BackgroundTask;
  userId: string;
  out: OutputRing;
  abort: AbortController;
  done: Promise<void>;
}

/**
 * Commands started with `Bash run_in_background`. They outlive the run that started them (a
 * dev server, a long build) and end on stop, on session delete, on shutdown, after the lifetime
 * limit, or after OUTPUT_KILL_BYTES of output. Each keeps only the tail of its output. State is
 * per process: a restart ends them. Finished tasks stay listed, at most 2 × maxTasks per user.
 */
export class BackgroundTasks {
  private bySession = new Map<string, Map<string, Entry>>();
  private readonly limits: BackgroundLimits;

  constructor(limits: Partial<BackgroundLimits> = {}) {
    this.limits = { ...DEFAULT_BACKGROUND_LIMITS, ...limits };
  }

  private entries(userId?: string): Entry[] {
    const all = [...this.bySession.values()].flatMap((m) => [...m.values()]);
    return userId === undefined ? all : all.filter((e) => e.userId === userId);
  }

  start(
    sessionId: string,
    computer: Computer,
    command: string,
    opts: { userId: string; cwd: string; env?: Record<string, string>; description?: string; toolCallId?: string },
  ): BackgroundTask {
    const mine = this.entries(opts.userId);
    const running = mine.filter((e) => e.task.status === 'running');
    if (running.length >= this.limits.maxTasks) {
      throw new ToolError(
        `${running.length} background tasks are already running (limit ${this.limits.maxTasks} per user): ` +
          `${running.map((e) => `${e.task.id} (${e.task.command.slice(0, 60)})`).join(', ')}. Stop one, or run the command in the foreground.`,
      );
    }
    this.forgetOldFinished(mine.filter((e) => e.task.status !== 'running'));
    const abort = new AbortController();
    const task: BackgroundTask = {
      id: newId('bg'),
      session_id: sessionId,
      command,
      description: opts.description ?? null,
      status: 'running',
      exit_code: null,
      started_at: new Date().toISOString(),
      finished_at: null,
    };
    const out = new OutputRing(this.limits.outputBytes);
    const entry: Entry = { task, userId: opts.userId, out, abort, done: Promise.resolve() };
    let why: string | null = null;
    const kill = (reason: string) => {
      if (why) return;
      why = reason;
      abort.abort();
    };
    const lifetime = setTimeout(() => kill(`ran longer than the ${this.limits.maxLifetimeMs} ms limit`), this.limits.maxLifetimeMs);
    lifetime.unref();
    const push = (chunk: string) => {
      out.push(chunk);
      if (out.totalBytes > OUTPUT_KILL_BYTES) kill(`wrote more than ${OUTPUT_KILL_BYTES} bytes of output`);
    };
    entry.done = computer
      .exec(command, { cwd: opts.cwd, env: opts.env, signal: abort.signal, onOutput: (_s, c) => push(c), maxOutputBytes: 1024, origin: { sessionId, toolCallId: opts.toolCallId ?? null } })
      .then(
        (r) => {
          task.exit_code = r.exitCode;
          task.status = r.aborted ? 'killed' : r.exitCode === 0 ? 'completed' : 'failed';
        },
        (e) => {
          out.push(`\n[background task error: ${(e as Error).message}]\n`);
          task.status = 'failed';
        },
      )
      .finally(() => {
        clearTimeout(lifetime);
        if (why) out.push(`\n[background task stopped: it ${why}]\n`);
        task.finished_at = new Date().toISOString();
      });
    let tasks = this.bySession.get(sessionId);
    if (!tasks) this.bySession.set(sessionId, (tasks = new Map()));
    tasks.set(task.id, entry);
    return task;
  }

  /** Finished tasks beyond 2 × maxTasks per user are forgotten, oldest first, so their output is freed. */
  private forgetOldFinished(finished: Entry[]) {
    const extra = finished.length - (2 * this.limits.maxTasks - 1);
    if (extra <= 0) return;
    finished.sort((a, b) => (a.task.finished_at ?? '').localeCompare(b.task.finished_at ?? ''));
    for (const e of finished.slice(0, extra)) this.bySession.get(e.task.session_id)?.delete(e.task.id);
  }

  list(sessionId: string): BackgroundTask[] {
    return [...(this.bySession.get(sessionId)?.values() ?? [])].map((e) => e.task);
  }

  /**
   * The task with the last `tail` lines of its kept output. `total_lines` and `output_bytes`
   * count everything the task wrote; `dropped_bytes` is how much of that is no longer kept.
   */
  get(sessionId: string, taskId: string, tail = 100): (BackgroundTask & { output: string; total_lines: number; output_bytes: number; dropped_bytes: number }) | null {
    const e = this.bySession.get(sessionId)?.get(taskId);
    if (!e) return null;
    const text = e.out.text();
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const kept = Buffer.byteLength(text);
    return {
      ...e.task,
      output: lines.slice(-tail).join('\n'),
      total_lines: e.out.newlines + (text && !text.endsWith('\n') ? 1 : 0),
      output_bytes: e.out.totalBytes,
      dropped_bytes: Math.max(0, e.out.totalBytes - kept),
    };
  }

  async stop(sessionId: string, taskId: string): Promise<BackgroundTask | null> {
    const e = this.bySession.get(sessionId)?.get(taskId);
    if (!e) return null;
    e.abort.abort();
    await e.done;
    return e.task;
  }

  /** Stops every task of a session and forgets them (session deleted, computer reset). */
  async stopSession(sessionId: string) {
    const tasks = [...(this.bySession.get(sessionId)?.values() ?? [])];
    tasks.forEach((e) => e.abort.abort());
    await Promise.all(tasks.map((e) => e.done));
    this.bySession.delete(sessionId);
  }

  async close() {
    await Promise.all([...this.bySession.keys()].map((s) => this.stopSession(s)));
  }
}
