import t from 'tap';
import { EARLY_LINES, LateLogger, type Logger } from '../../src/platform/lib/logger.js';

/** A logger that records what it is given, as `level msg`. */
function recorder(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    error: (_o, m) => lines.push(`error ${m}`),
    warn: (_o, m) => lines.push(`warn ${m}`),
    info: (_o, m) => lines.push(`info ${m}`),
  };
}

t.test('lines logged before bind reach the target, in order, then later lines follow', async (t) => {
  const err = console.error;
  console.error = () => {};
  t.teardown(() => {
    console.error = err;
  });
  const log = new LateLogger();
  log.info({}, 'one');
  log.warn({}, 'two');
  log.error({}, 'three');
  const target = recorder();
  log.bind(target);
  log.info({}, 'four');
  t.same(target.lines, ['info one', 'warn two', 'error three', 'info four']);
});

t.test('past EARLY_LINES the oldest go, and the target is told how many', async (t) => {
  const log = new LateLogger();
  for (let i = 0; i < EARLY_LINES + 5; i++) log.info({}, `l${i}`);
  const target = recorder();
  log.bind(target);
  t.equal(target.lines.length, EARLY_LINES + 1);
  t.equal(target.lines[0], 'warn log lines from before the logger was ready were dropped');
  t.equal(target.lines[1], 'info l5');
  t.equal(target.lines.at(-1), `info l${EARLY_LINES + 4}`);
});
