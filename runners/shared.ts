/**
 * Pieces both runners need: user id and working-directory checks, output capture with a byte cap,
 * and the timeout/abort watchdog around one exec. File access is not here: host code reads and
 * writes a user's tree only through the confined file layer (src/core/files/folder-fs.ts).
 */
import { randomUUID } from 'node:crypto';
import { lstat, realpath, rename, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, posix, relative, resolve, sep } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { ExecOptions, ExecResult, OutputStream } from './types.js';

export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

/**
 * User ids become folder names, container names and label values: refuse anything that could
 * walk out of <home>/workspaces or that Docker would not accept in a name.
 */
const USER_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export function checkUserId(userId: string): string {
  if (typeof userId !== 'string' || !USER_ID.test(userId) || userId.includes('..')) {
    throw new Error(`invalid user id for a computer: ${JSON.stringify(userId)}`);
  }
  return userId;
}

/** Host folder of a user's computer workspace under the workspaces root (same layout as src/core/files/paths.ts). */
export function userFolderHostDir(root: string, userId: string): string {
  return join(root, checkUserId(userId));
}

/** The workspaces root: AGENTSVC_WORKSPACES, else <home>/workspaces. */
export function foldersRoot(opts: { home: string; workspaces?: string }): string {
  return resolve(opts.workspaces ?? join(opts.home, 'workspaces'));
}

export class FolderPathError extends Error {
  readonly code = 'PATH_OUTSIDE_WORKSPACE';
}

function within(base: string, p: string): boolean {
  const rel = relative(base, p);
  return rel === '' || (rel !== '..' && !rel.startsWith('..' + sep) && !isAbsolute(rel));
}

/**
 * Map `path` (relative to the computer's root, or absolute as the computer sees it) to the host
 * path under hostRoot. The deepest existing ancestor goes through realpath so a symlink planted by
 * a tool (`ln -s /etc/passwd x`) cannot make the service read or write outside the workspace.
 */
export async function hostPath(hostRoot: string, root: string, path: string): Promise<{ host: string; rel: string }> {
  if (typeof path !== 'string' || path.includes('\0')) throw new FolderPathError('invalid path');
  let rel = path;
  if (posix.isAbsolute(path)) {
    rel = posix.relative(root, posix.normalize(path));
    if (rel === '..' || rel.startsWith('../')) throw new FolderPathError(`${path} is outside the workspace`);
  }
  const target = resolve(hostRoot, rel);
  if (!within(hostRoot, target)) throw new FolderPathError(`${path} is outside the workspace`);
  const realRoot = await realpath(hostRoot);
  let existing = target;
  const missing: string[] = [];
  while (existing !== hostRoot) {
    try {
      await lstat(existing);
      break;
    } catch {
      missing.unshift(existing.slice(dirname(existing).length + 1));
      existing = dirname(existing);
    }
  }
  const real = join(await realpath(existing), ...missing);
  if (!within(realRoot, real)) throw new FolderPathError(`${path} resolves outside the workspace`);
  return { host: real, rel: relative(realRoot, real) };
}

/** Where `cwd` is on the host and inside the computer; it must exist and be a folder. */
export async function resolveCwd(hostRoot: string, root: string, cwd: string | undefined): Promise<{ host: string; inner: string }> {
  const { host, rel } = await hostPath(hostRoot, root, cwd ?? '.');
  const st = await lstat(host).catch(() => null);
  if (!st?.isDirectory()) throw new FolderPathError(`working directory ${cwd} does not exist in the workspace`);
  return { host, inner: rel ? posix.join(root, rel.split('\\').join('/')) : root };
}

/**
 * A command the runner will not run. `isToolError`: the tool layer (src/core/engine/tool-exec.ts) shows
 * it to the model as a tool error it can act on, unlike RunnerUnavailableError, which fails the run.
 */
export class SandboxRefusal extends Error {
  readonly isToolError = true;
  constructor(
    readonly code: 'ENV_NOT_ALLOWED' | 'SANDBOX_UNAVAILABLE',
    message: string,
  ) {
    super(message);
  }
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/**
 * Variables that change how the loader or a shell starts (code from a file named by the value) and
 * the runner's own AGENTSVC_* markers. User variables only ever reach processes inside the sandbox,
 * so this is defence in depth there; it matters where the operator allowed unconfined commands.
 * PATH stays allowed: inside the sandbox it can only name system folders or the user's own files.
 */
/** Loader and shell start-up variables, and our own settings: never passed into a sandbox. */
export const ENV_RESERVED =
  /^(LD_.*|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|GCONV_PATH|GLIBC_TUNABLES|LOCPATH|NLSPATH|HOSTALIASES|RESOLV_HOST_CONF|MALLOC_.*|AGENTSVC_.*)$/;

/** The session's variables, checked: a bad one refuses the whole command with a clear message. */
export function checkUserEnv(env: Record<string, string> | undefined): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of Object.entries(env ?? {})) {
    if (!ENV_NAME.test(name)) throw new SandboxRefusal('ENV_NOT_ALLOWED', `environment variable name ${JSON.stringify(name)} is not valid: use letters, digits and _`);
    if (ENV_RESERVED.test(name)) {
      throw new SandboxRefusal(
        'ENV_NOT_ALLOWED',
        `environment variable ${name} is not allowed: loader and shell start-up variables (LD_*, BASH_ENV, ENV, GCONV_PATH, GLIBC_TUNABLES, ...) and ` +
        `AGENTSVC_* are refused; remove it from the session's env`,
      );
    }
    if (typeof value !== 'string' || value.includes('\0')) throw new SandboxRefusal('ENV_NOT_ALLOWED', `environment variable ${name} must be a string without NUL characters`);
    out.push([name, value]);
  }
  return out;
}

export interface Owner {
  uid: number;
  gid: number;
}

/** Length of the longest prefix of `b` that does not end inside a UTF-8 sequence. */
function completeUpTo(b: Buffer): number {
  let i = b.length - 1;
  while (i >= 0 && i > b.length - 4 && (b[i] & 0xc0) === 0x80) i--;
  if (i < 0 || b[i] < 0xc0) return b.length;
  const need = b[i] >= 0xf0 ? 4 : b[i] >= 0xe0 ? 3 : 2;
  return i + need > b.length ? i : b.length;
}

/**
 * Keeps at most `max` bytes of each stream (its first and last max/2, with a marker saying how much
 * was left out between them) and streams decoded text to onOutput as it arrives. Everything past
 * the cap is read and discarded, never stored, so a command printing gigabytes costs the service
 * CPU time (bounded by the exec's timeout), not memory, and still ends with its own exit code.
 */
export class OutputCollector {
  private readonly heads: Record<OutputStream, Buffer[]> = { stdout: [], stderr: [] };
  private readonly tails: Record<OutputStream, Buffer[]> = { stdout: [], stderr: [] };
  private readonly headBytes: Record<OutputStream, number> = { stdout: 0, stderr: 0 };
  private readonly tailBytes: Record<OutputStream, number> = { stdout: 0, stderr: 0 };
  private readonly total: Record<OutputStream, number> = { stdout: 0, stderr: 0 };
  private readonly decoders: Record<OutputStream, StringDecoder> = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  private readonly headMax: number;
  private readonly tailMax: number;
  truncated = false;

  constructor(
    max: number,
    private readonly onOutput?: (stream: OutputStream, chunk: string) => void,
  ) {
    this.headMax = Math.ceil(Math.max(0, max) / 2);
    this.tailMax = Math.max(0, max) - this.headMax;
  }

  push(stream: OutputStream, data: Buffer): void {
    this.total[stream] += data.length;
    let rest = data;
    const room = this.headMax - this.headBytes[stream];
    if (room > 0) {
      const part = rest.subarray(0, room);
      this.heads[stream].push(part);
      this.headBytes[stream] += part.length;
      rest = rest.subarray(part.length);
    }
    if (rest.length && this.tailMax > 0) {
      // Keep only the newest tailMax bytes: drop whole old chunks, then trim the oldest one kept.
      const tail = this.tails[stream];
      tail.push(rest.length > this.tailMax ? Buffer.from(rest.subarray(rest.length - this.tailMax)) : Buffer.from(rest));
      this.tailBytes[stream] += Math.min(rest.length, this.tailMax);
      while (this.tailBytes[stream] - tail[0].length >= this.tailMax) this.tailBytes[stream] -= tail.shift()!.length;
      const over = this.tailBytes[stream] - this.tailMax;
      if (over > 0) {
        tail[0] = tail[0].subarray(over);
        this.tailBytes[stream] -= over;
      }
    }
    if (this.total[stream] > this.headMax + this.tailMax) this.truncated = true;
    if (this.onOutput) {
      const text = this.decoders[stream].write(data);
      if (text) this.safeCallback(stream, text);
    }
  }

  private safeCallback(stream: OutputStream, text: string): void {
    // A throwing listener must not take the process (or the exec bookkeeping) down with it.
    try {
      this.onOutput?.(stream, text);
    } catch {}
  }

  text(stream: OutputStream): string {
    if (this.onOutput) {
      const rest = this.decoders[stream].end();
      if (rest) this.safeCallback(stream, rest);
    }
    const head = Buffer.concat(this.heads[stream]);
    const tail = Buffer.concat(this.tails[stream]);
    const omitted = this.total[stream] - head.length - tail.length;
    if (omitted <= 0) return Buffer.concat([head, tail]).toString('utf8');
    // Cut on character boundaries: no U+FFFD where a multi-byte character was split.
    const end = completeUpTo(head);
    let start = 0;
    while (start < tail.length && start < 3 && (tail[start] & 0xc0) === 0x80) start++;
    return `${head.subarray(0, end).toString('utf8')}\n[... ${omitted + (head.length - end) + start} bytes omitted ...]\n${tail.subarray(start).toString('utf8')}`;
  }
}

/**
 * Arms the timeout and the abort signal of one exec. `kill` is called at most once; the returned
 * state says which of the two fired.
 */
export function watchdog(opts: ExecOptions, kill: () => void): { timedOut: boolean; aborted: boolean; dispose(): void } {
  const state = { timedOut: false, aborted: false, dispose: () => {} };
  let fired = false;
  const fire = (why: 'timedOut' | 'aborted') => {
    if (fired) return;
    fired = true;
    state[why] = true;
    kill();
  };
  const timer = opts.timeoutMs && opts.timeoutMs > 0 ? setTimeout(() => fire('timedOut'), opts.timeoutMs) : null;
  const onAbort = () => fire('aborted');
  if (opts.signal?.aborted) queueMicrotask(onAbort);
  else opts.signal?.addEventListener('abort', onAbort, { once: true });
  state.dispose = () => {
    if (timer) clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  };
  return state;
}

export function finishResult(out: OutputCollector, dog: { timedOut: boolean; aborted: boolean }, started: number, exitCode: number | null, signal: string | null): ExecResult {
  return {
    exitCode,
    signal,
    stdout: out.text('stdout'),
    stderr: out.text('stderr'),
    timedOut: dog.timedOut,
    aborted: dog.aborted,
    truncated: out.truncated,
    durationMs: Date.now() - started,
  };
}

/** Rejects with `what` after ms; for control-plane calls that must not hang the caller. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

/**
 * Remove a user's workspace folder; false when there was none. Moved aside in one step first, so
 * the service writing into it (REST file writes are not killed by a reset) or a second reset at the
 * same moment cannot make the removal fail half-way with ENOTEMPTY.
 */
export async function removeUserFolder(hostRoot: string): Promise<boolean> {
  const aside = join(dirname(hostRoot), `.removing-${randomUUID()}`);
  try {
    await rename(hostRoot, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
  await rm(aside, { recursive: true, force: true, maxRetries: 5 });
  return true;
}

/**
 * Write `input` to a process's standard input, then close it. A process that exits without reading
 * it all (EPIPE) is not an error of the caller; backpressure is respected for streamed input.
 */
export async function feedStdin(w: NodeJS.WritableStream, input: NonNullable<ExecOptions['stdin']>): Promise<void> {
  w.on('error', () => {});
  if (typeof input === 'string' || input instanceof Uint8Array) {
    w.end(input);
    return;
  }
  try {
    for await (const chunk of input) {
      if (!w.write(chunk)) await new Promise<void>((r) => w.once('drain', r));
    }
  } catch {
    // A failing producer closes the input; the process sees end of file.
  } finally {
    w.end();
  }
}
