import tap, { type Test } from 'tap';
import { buildWithModel } from '../helpers/chat.js';
import { waitFor as waitUntil } from '../helpers/wait.js';
import { artifact, startCli, tmuxMissing, tmuxServer } from './helpers.js';

/**
 * What the tests of the interactive `agentsvc chat`'s keys share (docs/terminal-keys.md): a tmux
 * server of the file's own (killed at the end of the file), a client started on a fresh service
 * with the fake model, and the screens they wait for. The cases are split over keys-stop,
 * keys-exit and keys-pickers.test.ts so that each file stays well under a minute.
 */
export function keysTerminal(prefix: string) {
  const { tmux, screen, waitFor, kill } = tmuxServer(`agentsvc-${prefix}-${process.pid}`);
  tap.teardown(kill);

  /** Saved under test/artifacts/terminal and printed as comments of the test. */
  const show = (t: Test, name: string, text: string) => {
    artifact(name, text);
    for (const l of text.split('\n')) t.comment(`| ${l}`);
  };

  /** A service with the fake model and `agentsvc chat` on it in tmux session `name`, its empty editor shown. */
  async function started(t: Test, name: string, env: Record<string, string> = {}) {
    const { app, model } = await buildWithModel(t, env);
    startCli(tmux, name, { AGENTSVC_HOME: app.home, AGENTSVC_URL: app.url, NO_COLOR: '1' }, ['chat'], { columns: 100, rows: 30 });
    await waitFor(name, new RegExp(`new session \\(made by your first message\\)[^\\n]*${IDLE}`));
    return { app, model };
  }

  /** Wait until the screen no longer matches; the screen then. */
  const waitGone = (name: string, re: RegExp, timeoutMs = 10_000): Promise<string> =>
    waitUntil(
      () => {
        const text = screen(name);
        return re.test(text) ? null : text;
      },
      { timeoutMs, everyMs: 50, what: `the screen of ${name} to stop matching ${re}` },
    );

  return { tmux, screen, waitFor, show, started, waitGone, needTmux: (t: Test) => !tmuxMissing(t) };
}

/** The empty editor at the bottom of the screen. */
export const IDLE = '\\n─+\\n\\n─+$';
/** An answer that streams for 9 s unless stopped. */
export const SLOW = { text: Array.from({ length: 60 }, (_, i) => `tick${i} `), delayMs: 150 };
