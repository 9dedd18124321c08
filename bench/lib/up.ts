import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

/** `agentsvc up --port 0` in its own process, as an operator runs it; resolves once it listens. */
export async function startUp(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, '..', '..', 'bin', 'run.js'), 'up', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.once('exit', (c) => reject(new Error(`up exited ${c}: ${out}`)));
    child.stdout!.on('data', (c) => {
      out += c;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve(m[1].replace('0.0.0.0', '127.0.0.1'));
    });
  });
  const stop = () =>
    new Promise<void>((r) => {
      if (child.exitCode !== null) return r();
      child.once('exit', () => r());
      child.kill('SIGTERM');
    });
  return { child, url, stop };
}
