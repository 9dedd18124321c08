/**
 * One command in a user's container through the Docker exec API, with a kill that reaches the
 * whole process group. The exec'd shell is already a session and group leader (runc calls setsid)
 * and carries a marker in its environment, so a second exec can find it (and any descendant that
 * kept the marker), then kill its group and session. No pid file: /tmp may not be writable.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type Dockerode from 'dockerode';
import type { ExecOptions, ExecResult, OutputStream } from '../types.js';
import { DEFAULT_MAX_OUTPUT_BYTES, OutputCollector, checkUserEnv, feedStdin, finishResult, watchdog } from '../shared.js';

const MARKER = 'AGENTSVC_EXEC';

/** $0 is the command: bash when the image has it (a login shell, like the local runner), else sh. */
const WRAPPER = 'if command -v bash >/dev/null 2>&1; then exec bash -lc "$0"; else exec sh -c "$0"; fi';

/**
 * $0 is the marker value. Waits briefly for a marked process (an abort can come before the command
 * started), then kills every group and session a marked process is in, and the marked processes.
 */
const KILLER = [
  'n=0',
  `while hits=$(grep -l "${MARKER}=$0" /proc/[0-9]*/environ 2>/dev/null); [ -z "$hits" ]; do`,
  '  n=$((n+1)); [ $n -ge 40 ] && exit 0; sleep 0.05',
  'done',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a JS template
  'pids=$(for h in $hits; do h=${h#/proc/}; echo ${h%/environ}; done)',
  'ids=$(for p in $pids; do cut -d" " -f5,6 /proc/$p/stat 2>/dev/null; done | tr " " "\\n" | sort -u)',
  // 0 and 1 would be the killer's own group and tini's: never targets.
  'ids=$(for g in $ids; do [ "$g" -gt 1 ] && echo $g; done)',
  'for g in $ids; do kill -9 -"$g" 2>/dev/null; done',
  `for g in $ids; do for p in $(awk -v g="$g" '$5 == g || $6 == g { print $1 }' /proc/[0-9]*/stat 2>/dev/null); do kill -9 "$p" 2>/dev/null; done; done`,
  'kill -9 $pids 2>/dev/null',
  'exit 0',
].join('\n');

/** After a kill, how long to wait for the output stream to end before cutting it. */
const KILL_GRACE_MS = 2000;
const QUICK_EXEC_MS = 10_000;

export interface ExecTarget {
  docker: Dockerode;
  container: Dockerode.Container;
  /** Control-plane call with a deadline (exec create/inspect): a hung daemon must not hang callers. */
  api<T>(p: Promise<T>, what: string): Promise<T>;
  /** Registry of kills in flight, so close() and reset() can end running commands. */
  running: Set<() => Promise<void>>;
}

function sink(out: OutputCollector, stream: OutputStream): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      out.push(stream, chunk);
      done();
    },
  });
}

/** Run a short helper command to completion (no streaming, no kill). */
export async function quickExec(t: ExecTarget, cmd: string[], env?: string[]): Promise<{ code: number | null; stdout: string }> {
  const out = new OutputCollector(64 * 1024);
  const exec = await t.api(t.container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, Env: env }), 'exec create');
  const stream = await t.api(exec.start({ hijack: true, stdin: false }), 'exec start');
  t.docker.modem.demuxStream(stream, sink(out, 'stdout'), sink(out, 'stderr'));
  // A control command (the killer, a probe) is short; one that does not end must not hold its
  // caller, which may be a run's timeout waiting for the kill.
  const cut = setTimeout(() => (stream as unknown as { destroy?: () => void }).destroy?.(), QUICK_EXEC_MS);
  await new Promise((done) => {
    stream.once('end', done);
    stream.once('close', done);
    stream.once('error', done);
  }).finally(() => clearTimeout(cut));
  const info = await t.api(exec.inspect(), 'exec inspect');
  return { code: info.Running ? null : info.ExitCode, stdout: out.text('stdout') };
}

export async function runExec(t: ExecTarget, command: string, workingDir: string, o: ExecOptions, proxy: [string, string][] = []): Promise<ExecResult> {
  const started = Date.now();
  const mark = randomBytes(8).toString('hex');
  // HOME in the workspace, as on the local runner: dotfiles (git config, pip --user) persist.
  // Exec Env only reaches processes in the container; the same names as on the local runner are refused.
  // `proxy`: the egress proxy's variables (runners/egress.ts), after the user's so they hold.
  const env = [['HOME', '/workspace'], ...checkUserEnv(o.env), ...proxy, [MARKER, mark]].map(([k, v]) => `${k}=${v}`);
  const exec = await t.api(
    t.container.exec({
      Cmd: ['sh', '-c', WRAPPER, command],
      AttachStdin: o.stdin !== undefined,
      AttachStdout: true,
      AttachStderr: true,
      WorkingDir: workingDir,
      Env: env,
    }),
    'exec create',
  );
  const out = new OutputCollector(o.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, o.onOutput);
  let stream: NodeJS.ReadWriteStream | null = null;
  let grace: NodeJS.Timeout | undefined;
  let killing: Promise<void> | null = null;
  const kill = () => {
    killing ??= quickExec(t, ['sh', '-c', KILLER, mark])
      .then(() => undefined)
      .catch(() => undefined);
    // Anything that escaped the session and still holds the output must not keep the caller waiting.
    grace ??= setTimeout(() => (stream as unknown as { destroy?: () => void } | null)?.destroy?.(), KILL_GRACE_MS);
    return killing;
  };
  t.running.add(kill);
  const dog = watchdog(o, () => void kill());
  try {
    stream = await t.api(exec.start({ hijack: true, stdin: o.stdin !== undefined }), 'exec start');
    t.docker.modem.demuxStream(stream, sink(out, 'stdout'), sink(out, 'stderr'));
    if (o.stdin !== undefined) void feedStdin(stream, o.stdin);
    await new Promise((done) => {
      stream!.once('end', done);
      stream!.once('close', done);
      stream!.once('error', done);
    });
    if (killing) await killing;
    // The stream can end a moment before the daemon records the exit code.
    let info = await t.api(exec.inspect(), 'exec inspect');
    for (let i = 0; info.Running && i < 40; i++) {
      await new Promise((r) => setTimeout(r, 25));
      info = await t.api(exec.inspect(), 'exec inspect');
    }
    const code = info.Running ? null : info.ExitCode;
    // Report a kill the way a local child reports it: no exit code, the signal instead.
    if ((dog.timedOut || dog.aborted) && (code === null || code >= 128)) return finishResult(out, dog, started, null, 'SIGKILL');
    return finishResult(out, dog, started, code, null);
  } finally {
    dog.dispose();
    clearTimeout(grace);
    t.running.delete(kill);
  }
}
