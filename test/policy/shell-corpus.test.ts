// biome-ignore-all lint/suspicious/noTemplateCurlyInString: shell syntax, not templates
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decide, type PolicySet } from '../../src/features/policy/rules.js';
import { ShellParser } from '../../src/features/policy/shell.js';
import { needs } from '../helpers/needs.js';

// Command patterns fail closed (docs/policy-commands.md): a generated corpus of command lines,
// each run by a real bash in a throwaway bubblewrap sandbox whose `touch` (every path to it) is a
// shim that leaves /tmp/hit. Every line that made bash run touch must be judged denied by
// `deny Bash touch*`. Lines that run no touch are judged as the checker likes (it may refuse more).

const bwrap = spawnSync('sh', ['-c', 'command -v bwrap']).stdout?.toString().trim();
/** The sandbox's system: /usr read-only, nothing else of the host. */
const SYSTEM = [
  '--unshare-all',
  '--die-with-parent',
  '--tmpfs',
  '/',
  '--ro-bind',
  '/usr',
  '/usr',
  '--symlink',
  'usr/bin',
  '/bin',
  '--symlink',
  'usr/lib',
  '/lib',
  '--symlink',
  'usr/lib64',
  '/lib64',
  '--symlink',
  'usr/sbin',
  '/sbin',
];
const probe = bwrap ? spawnSync(bwrap, [...SYSTEM, '/bin/true']) : null;
const why = !bwrap ? 'bubblewrap is not installed' : probe?.status !== 0 ? `bubblewrap cannot start a sandbox here: ${probe?.stderr}` : '';
const skip = needs(t, 'the command corpus (bubblewrap)', why);

const SIZE = Number(process.env.SHELL_CORPUS_SIZE ?? 3000);
/** Lines per sandbox; the sandboxes run two at a time. */
const PER_SANDBOX = 500;

let seed = 40;
const rand = (n: number) => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return Math.floor((seed / 2 ** 31) * n);
};
const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)] as T;
/** Single-quoted for the shell. */
const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/** Ways to name touch (the shim stands at every path of it). */
const NAMES = [
  'touch',
  'touch',
  'touch',
  "'touch'",
  '"touch"',
  "t'o'uch",
  '\\touch',
  'tou""ch',
  '/usr/bin/touch',
  '/bin/touch',
  '/usr/bin/../bin/touch',
  "$'\\x74ouch'",
  "$'touch'",
  '/usr/bin/tou?h',
  '/usr/bin/tou[c]h',
  '/usr/bin/touc*',
  'tou{ch,}',
  '{touch,}',
  'tou\\\nch',
  '$T',
  '${T}',
  '"$T"',
  '$(echo touch)',
  '`echo touch`',
  '${U:-touch}',
  '"${T}"',
  '$(printf touch)',
  '$"touch"',
  '${T,,}',
  '${T@L}',
  '~/../../usr/bin/touch',
  'touc${T:4}',
];
/** Arguments: the file, as words that read differently. */
const ARGS = ['/tmp/hit', '"/tmp/hit"', '$H', '"$H"', '-c /tmp/hit', '/tmp/h{i,}t', '${H}', "'/tmp/hit'"];
/** Commands that run no touch, some mentioning it. */
const NOISE = [
  'echo hi',
  'true',
  ': x',
  'ls /',
  'cat /dev/null',
  'echo touch /tmp/hit',
  "echo 'touch /tmp/hit'",
  'printf %s touch',
  'grep -q touch /dev/null',
  'false',
  'test -e /tmp',
  'echo $T',
  '[[ -n x ]]',
  'x=1',
  'wc -l < /dev/null',
];
const PRELUDE = ['T=touch; H=/tmp/hit; ', 'T=touch H=/tmp/hit; ', 'export T=touch H=/tmp/hit\n', 'H=/tmp/hit; T=touch\n'];

/** A simple command running touch, plainly or hidden. */
const touch = () => `${pick(NAMES)} ${pick(ARGS)}`;

/** Wrappers: a command (as text) into a command that runs it. */
const WRAPPERS: ((c: string) => string)[] = [
  (c) => `env X=1 ${c}`,
  (c) => `env -u Y ${c}`,
  (c) => `env -S ${q(c)}`,
  (c) => `env --split-string=${q(c)}`,
  (c) => `env -- ${c}`,
  (c) => `nice ${c}`,
  (c) => `nice -n 5 ${c}`,
  (c) => `nice -5 ${c}`,
  (c) => `nohup ${c} 2>/dev/null`,
  (c) => `timeout 5 ${c}`,
  (c) => `timeout -s KILL 5 ${c}`,
  (c) => `timeout --signal=TERM 5 ${c}`,
  (c) => `xargs ${c} < /dev/null`,
  (c) => `echo . | xargs -I{} ${c}`,
  (c) => `echo /tmp/hit | xargs -n1 ${c.split(' ')[0]}`,
  (c) => `find / -maxdepth 0 -exec ${c} \\;`,
  (c) => `find / -maxdepth 0 -exec true \\; -exec ${c} \\;`,
  (c) => `flock /tmp/l ${c}`,
  (c) => `flock /tmp/l -c ${q(c)}`,
  (c) => `flock -w 1 /tmp/l ${c}`,
  (c) => `setsid -w ${c}`,
  (c) => `stdbuf -o0 ${c}`,
  (c) => `ionice -c 3 ${c}`,
  (c) => `taskset 1 ${c}`,
  (c) => `taskset -c 0 ${c}`,
  (c) => `command ${c}`,
  (c) => `(exec ${c})`,
  (c) => `time ${c}`,
  (c) => `time -p ${c}`,
  (c) => `unshare ${c}`,
  (c) => `script -qc ${q(c)} /dev/null`,
  (c) => `sh -c ${q(c)}`,
  (c) => `bash -c ${q(c)}`,
  (c) => `bash -c -- ${q(c)}`,
  (c) => `bash -ec ${q(c)}`,
  (c) => `bash -o pipefail -c ${q(c)}`,
  (c) => `bash -c ${q(c)} name arg`,
  (c) => `eval ${q(c)}`,
  (c) => `eval ${c}`,
  (c) => `busybox ${c}`,
  (c) => `busybox sh -c ${q(c)}`,
  (c) => `chrt -o 0 ${c}`,
  (c) => `sudo ${c}`,
  (c) => `builtin command ${c}`,
  (c) => `env -i PATH=/usr/bin ${c}`,
  (c) => `dash -c ${q(c)}`,
];
/** Shells fed their program on standard input, and other ways bash reads code it builds. */
const FED: ((c: string) => string)[] = [
  (c) => `echo ${q(c)} | sh`,
  (c) => `printf '%s\\n' ${q(c)} | bash`,
  (c) => `bash <<EOF\n${c}\nEOF`,
  (c) => `bash <<< ${q(c)}`,
  (c) => `sh -s < <(echo ${q(c)})`,
  (c) => `source <(echo ${q(c)})`,
  (c) => `. /dev/stdin <<< ${q(c)}`,
  (c) => `bash /dev/stdin <<< ${q(c)}`,
  (c) => `trap ${q(c)} EXIT`,
  (c) => `x=${q(c)}; eval "$x"`,
  (c) => `f() { ${c}; }; f`,
  (c) => `a='b[$(${c})]'; echo $((a))`,
  (c) => `x='$(${c})'; echo "\${x@P}"`,
  (c) => `PS4='$(${c})'; set -x; :`,
  (c) => `alias t=${q(c)}\nt`,
  (c) => `shopt -s expand_aliases\nalias t=${q(c)}\nt`,
  (c) => `hash -p /usr/bin/touch t; t /tmp/hit; : ${q(c)}`,
  (c) => `BASH_CMDS[t]=/usr/bin/touch; t /tmp/hit; : ${q(c)}`,
  (c) => `coproc ${c}\nwait`,
  (c) => `declare -n r='a[$(${c})]'; : $r`,
  (c) => `[[ -v a[$(${c})] ]]`,
  (c) => `test -v 'a[$(${c})]'`,
  (c) => `declare -i n; n='a[$(${c})]'`,
  (c) => `mapfile -C ${q(c)} -c 1 <<< x`,
  (c) => `read 'a[$(${c})]' <<< 1`,
  (c) => `printf -v 'a[$(${c})]' x`,
  (c) => `x='a[$(${c})]'; [[ $x -eq 0 ]]`,
  (c) => `echo \${x:-$(${c})}`,
  (c) => `cat <<EOF\n$(${c})\nEOF`,
  (c) => `cat <<'EOF'\n$(${c})\nEOF`,
  (c) => `: <<< "$(${c})"`,
  (c) => `echo \${x#$(${c})}`,
  (c) => `compgen -C ${q(c)} x`,
  (c) => `echo ${c} | xargs env`,
  (c) => `echo ${c} | xargs nice -n 1`,
  // Backquotes in backquotes: bash un-escapes the inner text and runs it.
  (c) => `echo \`echo \\\`${c.replaceAll('\\', '\\\\').replaceAll('`', '\\`').replaceAll('$', '\\$')}\\\`\``,
];
/** Statements around a command. */
const AROUND: ((c: string) => string)[] = [
  (c) => c,
  (c) => c,
  (c) => `(${c})`,
  (c) => `{ ${c}; }`,
  (c) => `if true; then ${c}; fi`,
  (c) => `if false; then :; else ${c}; fi`,
  (c) => `for i in 1; do ${c}; done`,
  (c) => `while true; do ${c}; break; done`,
  (c) => `case x in x) ${c};; esac`,
  (c) => `echo $(${c})`,
  (c) => `echo "\`${c}\`"`,
  (c) => `cat <(${c})`,
  (c) => `: > >(${c})`,
  (c) => `y=$(${c})`,
  (c) => `${c} &\nwait`,
  (c) => `! ${c}`,
  (c) => `${c} | cat`,
  (c) => `echo | ${c}`,
  (c) => `${c} > /dev/null 2>&1`,
  (c) => `[[ -n $(${c}) ]]`,
];

/** One command that may run touch, nested up to `depth`. */
function command(depth: number): string {
  const r = rand(10);
  if (depth <= 0 || r < 3) return touch();
  if (r < 6) return pick(WRAPPERS)(command(depth - 1));
  if (r < 8) return pick(FED)(command(depth - 1));
  return pick(AROUND)(command(depth - 1));
}

/** A line: a prelude, then commands and noise joined by operators. */
function line(): string {
  let out = pick(PRELUDE);
  const n = 1 + rand(3);
  for (let i = 0; i < n; i++) {
    if (i) out += pick([' && ', ' || ', '; ', ' | ', '\n', ' && ']);
    out += rand(3) ? command(1 + rand(3)) : pick(NOISE);
  }
  return out;
}

// Inside the sandbox (its own pid namespace): each line run by bash's `eval` in a subshell (a
// fork, not a new bash: several times faster on a loaded machine; eval reads and runs the text
// command by command as `bash -c` does), waiting for what it started; then every process it left
// is killed (setsid, coproc: their touch counts for this line). A line that made the shim run
// leaves /tmp/hit, and its number is logged. No line reads stdin or waits for anything, and the
// whole sandbox has a deadline.
const HARNESS = `
i=0
while IFS= read -r -d '' line; do
  rm -f /tmp/hit
  (eval "$line
wait") </dev/null >/dev/null 2>&1
  kill -9 -1 2>/dev/null
  [ -e /tmp/hit ] && echo "$i" >> /ctl/log
  i=$((i+1))
done < /ctl/lines
echo done >> /ctl/log
`;

function sandbox(dir: string, lines: string[]): Promise<Set<number>> {
  writeFileSync(join(dir, 'lines'), lines.map((l) => `${l}\0`).join(''));
  writeFileSync(join(dir, 'harness.sh'), HARNESS);
  writeFileSync(join(dir, 'touch'), '#!/bin/sh\necho x > /tmp/hit\n');
  chmodSync(join(dir, 'touch'), 0o755);
  writeFileSync(join(dir, 'log'), '');
  const args = [
    ...SYSTEM,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    '--dir',
    '/home',
    '--bind',
    dir,
    '/ctl',
    '--ro-bind',
    join(dir, 'touch'),
    '/usr/bin/touch',
    '--chdir',
    '/tmp',
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/bin:/bin:/usr/sbin',
    '--setenv',
    'HOME',
    '/home',
    '/usr/bin/bash',
    '/ctl/harness.sh',
  ];
  return new Promise((resolve, reject) => {
    const p = spawn(bwrap as string, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => {
      err += d;
    });
    const deadline = setTimeout(() => p.kill('SIGKILL'), 200_000);
    p.on('error', reject);
    p.on('exit', () => {
      clearTimeout(deadline);
      const log = readFileSync(join(dir, 'log'), 'utf8').trim().split('\n');
      if (log.at(-1) !== 'done') return reject(new Error(`the sandbox stopped early: ${err.slice(0, 500)}`));
      resolve(new Set(log.slice(0, -1).map(Number)));
    });
  });
}

t.test('every generated line that ran touch is judged denied by `deny Bash touch*`', { skip, timeout: 300_000 }, async (t) => {
  const shell = await ShellParser.load();
  const policy: PolicySet = { default: 'allow', rules: [{ tool: 'Bash', pattern: 'touch*', action: 'deny', source: 'install' }] };
  const lines = Array.from({ length: SIZE }, line);
  const started = Date.now();
  const dirs: string[] = [];
  // Two sandboxes at a time.
  const ran = new Set<number>();
  for (let from = 0; from < lines.length; from += PER_SANDBOX * 2) {
    const pair = [from, from + PER_SANDBOX]
      .filter((f) => f < lines.length)
      .map((f) => {
        const dir = mkdtempSync(join(tmpdir(), 'shell-corpus-'));
        dirs.push(dir);
        return sandbox(dir, lines.slice(f, f + PER_SANDBOX)).then((hits) => {
          for (const h of hits) ran.add(f + h);
          return hits;
        });
      });
    await Promise.all(pair);
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  const misses: string[] = [];
  let denied = 0;
  for (let i = 0; i < lines.length; i++) {
    const d = decide(policy, { tool: 'Bash', provider: 'bash', targets: shell.commands(lines[i] as string), kind: 'text' });
    if (d.action === 'deny') denied++;
    if (ran.has(i) && d.action !== 'deny') misses.push(`${JSON.stringify(lines[i])}: ${JSON.stringify(shell.commands(lines[i] as string))}`);
  }
  t.comment(`${lines.length} lines, ${ran.size} ran touch in bash, ${denied} judged denied, ${misses.length} misses; ${((Date.now() - started) / 1000).toFixed(1)} s`);
  t.ok(ran.size > lines.length / 5, `${ran.size} lines ran touch: the corpus exercises the sandbox`);
  t.ok(ran.size < lines.length, 'some lines ran no touch');
  t.same(misses, [], 'no line that ran touch was judged anything but denied');
});
