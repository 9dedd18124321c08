import { newId } from '../lib/ids.js';
import type { Computer } from '../../runners/types.js';

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

const KEEP_LINES = 10_000;

interface Entry {
  task: BackgroundTask;
  lines: string[];
  partial: string;
  abort: AbortController;
  done: Promise<void>;
}

/**
 * Commands started with `Bash run_in_background`. They outlive the run that started them (a
 * dev server, a long build), keep the last 10 000 lines of output, and end on stop, on session
 * delete, or on shutdown. State is per process: a restart ends them.
 */
export class BackgroundTasks {
  private bySession = new Map<string, Map<string, Entry>>();

  start(sessionId: string, computer: Computer, command: string, opts: { cwd: string; env?: Record<string, string>; description?: string }): BackgroundTask {
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
    const entry: Entry = { task, lines: [], partial: '', abort, done: Promise.resolve() };
    const push = (chunk: string) => {
      const parts = (entry.partial + chunk).split('\n');
      entry.partial = parts.pop()!;
      entry.lines.push(...parts);
      if (entry.lines.length > KEEP_LINES) entry.lines.splice(0, entry.lines.length - KEEP_LINES);
    };
    entry.done = computer
      .exec(command, { cwd: opts.cwd, env: opts.env, signal: abort.signal, onOutput: (_s, c) => push(c), maxOutputBytes: 1024 })
      .then(
        (r) => {
          task.exit_code = r.exitCode;
          task.status = r.aborted ? 'killed' : r.exitCode === 0 ? 'completed' : 'failed';
        },
        (e) => {
          push(`\n[background task error: ${(e as Error).message}]\n`);
          task.status = 'failed';
        },
      )
      .finally(() => {
        if (entry.partial) entry.lines.push(entry.partial);
        entry.partial = '';
        task.finished_at = new Date().toISOString();
      });
    let tasks = this.bySession.get(sessionId);
    if (!tasks) this.bySession.set(sessionId, (tasks = new Map()));
    tasks.set(task.id, entry);
    return task;
  }

  list(sessionId: string): BackgroundTask[] {
    return [...(this.bySession.get(sessionId)?.values() ?? [])].map((e) => e.task);
  }

  get(sessionId: string, taskId: string, tail = 100): (BackgroundTask & { output: string; total_lines: number }) | null {
    const e = this.bySession.get(sessionId)?.get(taskId);
    if (!e) return null;
    const lines = e.partial ? [...e.lines, e.partial] : e.lines;
    return { ...e.task, output: lines.slice(-tail).join('\n'), total_lines: lines.length };
  }

  async stop(sessionId: string, taskId: string): Promise<BackgroundTask | null> {
    const e = this.bySession.get(sessionId)?.get(taskId);
    if (!e) return null;
    e.abort.abort();
    await e.done;
    return e.task;
  }

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
