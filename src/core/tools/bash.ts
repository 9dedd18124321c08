import { z } from 'zod';
import { markQuota, undoPast } from '../files/command-quota.js';
import { defineTool } from './define.js';
import { ToolError } from './types.js';
import type { BackgroundTasks } from './background.js';

export interface BashOptions {
  defaultTimeoutMs: number;
  maxTimeoutMs?: number;
  background: BackgroundTasks;
}

export function createBashTool(opts: BashOptions) {
  const max = opts.maxTimeoutMs ?? 600_000;
  return defineTool({
    name: 'Bash',
    description:
      `Run a shell command in the session workspace (the current directory) inside the sandboxed computer. ` +
      `timeout is in milliseconds (default ${opts.defaultTimeoutMs}, max ${max}); a command past it is killed with its whole process group. ` +
      `run_in_background starts it as a background task and returns its id at once (for servers and long jobs); ` +
      `its output can be read by the user in the background tasks view. Output over the size bound is truncated in the middle.`,
    provider: 'bash',
    input: z
      .object({
        command: z.string().min(1),
        timeout: z.number().int().min(100).max(max).optional(),
        run_in_background: z.boolean().optional(),
        description: z.string().describe('What the command does, in 5-10 words').optional(),
      })
      .strict(),
    async execute({ command, timeout, run_in_background, description }, ctx) {
      const computer = await ctx.workspace.computer();
      // The session folder, made (or verified) through the confined layer: a user may have removed it.
      await ctx.workspace.files.mkdir('.');
      // Relative to the computer's root: right on every runner, whatever the root's path on the host.
      const cwd = ctx.workspace.folder.session ?? '.';
      if (run_in_background) {
        const task = opts.background.start(ctx.sessionId, computer, command, { userId: ctx.userId, cwd, env: ctx.env, description, toolCallId: ctx.callId });
        return `Started background task ${task.id}. It keeps running after this turn; its output is available under background-tasks/${task.id}.`;
      }
      const limit = timeout ?? opts.defaultTimeoutMs;
      // With a storage quota, what the command adds past it is taken back after it ran.
      const mark = await markQuota(ctx.workspace.folder.account);
      const r = await computer.exec(command, { cwd, env: ctx.env, timeoutMs: limit, signal: ctx.signal, maxOutputBytes: 256 * 1024, origin: { sessionId: ctx.sessionId, toolCallId: ctx.callId } });
      const undo = mark && (await undoPast(mark));
      if (r.aborted && ctx.signal.aborted) throw ctx.signal.reason;
      if (undo)
        throw new ToolError(
          `QUOTA_EXCEEDED: the command wrote past the storage quota of ${undo.quotaBytes} bytes (${undo.usedBytes} in use after it); ` +
            `what it added was taken back (new entries removed: ${undo.removed}; files cut back to their earlier size: ${undo.truncated}).`,
        );
      let out = r.stdout;
      if (r.stderr) out += (out && !out.endsWith('\n') ? '\n' : '') + r.stderr;
      if (r.truncated) out += '\n[output cut at 256 KiB per stream]';
      if (r.timedOut) throw new ToolError(`Command timed out after ${limit} ms and was killed.\n${out}`.trimEnd());
      if (r.exitCode !== 0) return { output: `${out}${out ? '\n' : ''}[exit code ${r.exitCode ?? r.signal}]`, status: 'error' };
      return out || '(no output)';
    },
  });
}
