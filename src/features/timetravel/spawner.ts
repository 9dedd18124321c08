import { type ChildProcess, type ExecFileOptions, spawn } from 'node:child_process';

/**
 * execFile through a small helper process. Node forks the calling process to start a child, and
 * forking the service (hundreds of MB mapped) held its event loop 40-60 ms per git command, i.e.
 * per chat message (its checkpoint): at 200 sessions the streams stalled for tens of seconds. The
 * helper is a bare node process started once; it forks cheaply, and off the service's event loop.
 */
const HELPER = `
const { execFile } = require('node:child_process');
process.on('disconnect', () => process.exit(0));
process.on('message', (m) => {
  const child = execFile(m.file, m.args, m.opts, (e, stdout, stderr) => {
    process.send({ id: m.id, error: e ? { message: e.message } : null, stdout: m.binary ? stdout.toString('base64') : stdout, stderr: String(stderr) });
  });
  if (m.input !== undefined) child.stdin?.end(m.input);
});`;

type Done = (e: Error | null, stdout: string, stderr: string) => void;

export class Spawner {
  private helper: ChildProcess | null = null;
  private pending = new Map<number, Done>();
  private next = 0;

  private start(): ChildProcess {
    const h = spawn(process.execPath, ['-e', HELPER], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    h.on('message', (m: { id: number; error: { message: string } | null; stdout: string; stderr: string }) => {
      const done = this.pending.get(m.id);
      this.pending.delete(m.id);
      this.idle();
      done?.(m.error ? new Error(m.error.message) : null, m.stdout, m.stderr);
    });
    h.on('exit', () => {
      if (this.helper === h) this.helper = null;
      const lost = [...this.pending.values()];
      this.pending.clear();
      for (const done of lost) done(new Error('the process helper exited'), '', '');
    });
    h.on('error', () => {});
    return h;
  }

  /** The helper must not keep the service alive: referenced only while a command runs. */
  private idle() {
    if (this.pending.size) return;
    this.helper?.unref();
    (this.helper?.channel as { unref?: () => void } | undefined)?.unref?.();
  }

  /**
   * As child_process.execFile (string output); `input` is written to the command's stdin. With
   * `binary`, stdout is passed on as base64 (decode it with Buffer.from(out, 'base64')).
   */
  execFile(file: string, args: string[], opts: ExecFileOptions & { input?: string; binary?: boolean }, done: Done) {
    const { input, binary, ...rest } = opts;
    this.helper ??= this.start();
    this.helper.ref();
    (this.helper.channel as { ref?: () => void } | undefined)?.ref?.();
    const id = this.next++;
    this.pending.set(id, done);
    this.helper.send({ id, file, args, opts: { ...rest, encoding: binary ? 'buffer' : 'utf8' }, input, binary }, (e) => {
      if (!e || !this.pending.has(id)) return;
      this.pending.delete(id);
      this.idle();
      done(e, '', '');
    });
  }

  close() {
    this.helper?.kill();
    this.helper = null;
  }
}

/** One helper for the process's snapshots. */
export const spawner = new Spawner();
