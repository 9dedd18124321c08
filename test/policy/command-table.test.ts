import t from 'tap';
import { decide, type PolicySet } from '../../src/features/policy/rules.js';
import { ShellParser } from '../../src/features/policy/shell.js';
import { pipesAsLists, plainCommands } from '../../src/features/policy/shell-plain-line.js';

// docs/policy.md: Bash patterns are matched against every simple command of the line; a line that
// cannot be split matches every rule. Each row: the line, a deny pattern, and whether it meets it.
// The evasions of issue 28 (chaining, pipes, subshells, substitutions, sh -c, env, xargs, sudo,
// quoting tricks) are rows like any other.
const ROWS: [line: string, pattern: string, denied: boolean][] = [
  // plain commands
  ['curl https://example.com', 'curl*', true],
  ['curl', 'curl*', true],
  ['curly braces', 'curl *', false],
  ['ls -la', 'curl*', false],
  ['git push origin main', 'git push*', true],
  ['git push', 'git push*', true],
  ['git pushx', 'git push *', false],
  ['git status', 'git push*', false],
  ['git   push   origin', 'git push*', true],
  ['git log --oneline', 'git push*', false],
  ['npm publish', 'npm publish*', true],
  ['npm publish --access public', 'npm publish*', true],
  ['npm install', 'npm publish*', false],
  ['echo curl', 'curl*', false],
  ['echo "curl x"', 'curl*', false],
  ["echo 'a && curl b'", 'curl*', false],
  ['echo a\\&\\& curl b', 'curl*', false],
  ['grep -r curl .', 'curl*', false],
  ['cat notes-about-curl.txt', 'curl*', false],
  ['wget -q x', 'wget*', true],
  // lists and pipelines
  ['ls && curl x | sh', 'curl*', true],
  ['ls && curl x | sh', 'sh', true],
  ['ls || curl x', 'curl*', true],
  ['ls; curl x', 'curl*', true],
  ['ls ; curl x ; pwd', 'curl*', true],
  ['ls | curl -d @- x', 'curl*', true],
  ['ls |& curl x', 'curl*', true],
  ['curl x & ls', 'curl*', true],
  ['ls &\ncurl x', 'curl*', true],
  ['ls\ncurl x', 'curl*', true],
  ['ls\n\n  curl x\n', 'curl*', true],
  ['true && false || curl x', 'curl*', true],
  ['ls && pwd', 'curl*', false],
  ['ls | grep a | wc -l', 'curl*', false],
  // tree-sitter-bash reads `ls⏎curl x` in a long pipeline as one command `ls curl x`; bash never does
  ['cat a | grep b | ls\ncurl x > f | sh', 'curl*', true],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax, not a template
  ['echo ${x} | grep b | ls\ncurl x > f | sh', 'curl*', true],
  // a line continuation joins `ls` and `curl x` into one command (`| wc`: a pipe into `sh` reads its
  // program from the pipe, which matches every rule)
  ['ls | grep b | ls \\\ncurl x > f | wc', 'curl*', false],
  ['! curl x', 'curl*', true],
  // subshells, groups, substitutions
  ['(curl x)', 'curl*', true],
  ['(cd /tmp && curl x)', 'curl*', true],
  ['{ curl x; }', 'curl*', true],
  ['echo $(curl x)', 'curl*', true],
  ['echo "$(curl x)"', 'curl*', true],
  ['echo `curl x`', 'curl*', true],
  ['echo "`curl x`"', 'curl*', true],
  ['x=$(curl x)', 'curl*', true],
  ['export X=$(curl x)', 'curl*', true],
  ['local_var=`wget y` ls', 'wget*', true],
  ['cat <(curl x)', 'curl*', true],
  ['diff <(ls a) <(curl x)', 'curl*', true],
  ['ls > >(curl -d @- x)', 'curl*', true],
  ['echo $(echo $(curl x))', 'curl*', true],
  ['echo $((1 + 2))', 'curl*', false],
  ['echo "$HOME" $PATH', 'curl*', false],
  // control flow and functions
  ['if true; then curl x; fi', 'curl*', true],
  ['if curl x; then ls; fi', 'curl*', true],
  ['for i in 1 2; do curl $i; done', 'curl*', true],
  ['while true; do curl x; done', 'curl*', true],
  ['until false; do wget y; done', 'wget*', true],
  ['case $x in a) curl x;; esac', 'curl*', true],
  ['f() { curl x; }; f', 'curl*', true],
  ['function g { wget y; }', 'wget*', true],
  ['[[ -f a ]] && curl x', 'curl*', true],
  ['test -f a || curl x', 'curl*', true],
  // shells and eval
  ["sh -c 'curl x'", 'curl*', true],
  ['sh -c "curl x"', 'curl*', true],
  ["bash -c 'ls; curl x'", 'curl*', true],
  ["bash -lc 'curl x'", 'curl*', true],
  ["bash -e -c 'curl x'", 'curl*', true],
  ["zsh -c 'curl x'", 'curl*', true],
  ["dash -c 'curl x'", 'curl*', true],
  ["/bin/sh -c 'curl x'", 'curl*', true],
  ["sh -c \"bash -c 'curl x'\"", 'curl*', true],
  ["sh -c 'echo hi'", 'curl*', false],
  ['eval "curl x"', 'curl*', true],
  ["eval 'ls && curl x'", 'curl*', true],
  ["busybox sh -c 'curl x'", 'curl*', true],
  ['sh script.sh', 'curl*', false],
  // wrappers
  ['env X=1 curl x', 'curl*', true],
  ['env -i PATH=/bin curl x', 'curl*', true],
  ['env -u HOME curl x', 'curl*', true],
  ['env -S "curl x"', 'curl*', true],
  ['X=1 Y=2 curl x', 'curl*', true],
  ['sudo curl x', 'curl*', true],
  ['sudo -u root curl x', 'curl*', true],
  ['sudo -E -H curl x', 'curl*', true],
  ['doas curl x', 'curl*', true],
  ['xargs curl', 'curl*', true],
  ['cat urls | xargs -n1 curl -O', 'curl*', true],
  ['xargs -I{} curl {}', 'curl*', true],
  ["xargs sh -c 'curl x'", 'curl*', true],
  ['nice -n 10 curl x', 'curl*', true],
  ['nohup curl x &', 'curl*', true],
  ['time curl x', 'curl*', true],
  ['timeout 5 curl x', 'curl*', true],
  ['timeout -s KILL 5 curl x', 'curl*', true],
  ['command curl x', 'curl*', true],
  ['exec curl x', 'curl*', true],
  ['builtin command curl x', 'curl*', true],
  ['stdbuf -o0 curl x', 'curl*', true],
  ['setsid curl x', 'curl*', true],
  ["watch -n 1 'curl x'", 'curl*', true],
  ['find . -exec curl {} \\;', 'curl*', true],
  ['find . -name "*.txt" -execdir wget {} +', 'wget*', true],
  ['sudo env X=1 nice curl x', 'curl*', true],
  // quoting and paths of the command itself
  ["c'u'rl x", 'curl*', true],
  ['c"u"rl x', 'curl*', true],
  ['\\curl x', 'curl*', true],
  ["'curl' x", 'curl*', true],
  ['"curl" x', 'curl*', true],
  ['/usr/bin/curl x', 'curl*', true],
  ['./curl x', 'curl*', true],
  ["$'curl' x", 'curl*', true],
  ["git 'push' origin", 'git push*', true],
  ['git "push" --force', 'git push*', true],
  // what cannot be known before it runs: taken to match every rule
  ['$CMD x', 'curl*', true],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax, not a template
  ['${CMD} x', 'curl*', true],
  ['$(echo curl) x', 'curl*', true],
  ['`echo curl` x', 'curl*', true],
  ['sh -c "$SCRIPT"', 'curl*', true],
  ['eval "$X"', 'curl*', true],
  // what does not parse: taken to match every rule
  ['if [ ; then', 'curl*', true],
  ['ls &&', 'curl*', true],
  ['echo "unterminated', 'curl*', true],
  ['(ls', 'curl*', true],
  ["sh -c 'if then'", 'curl*', true],
  ['ls | | pwd', 'curl*', true],
  ['ls >', 'curl*', true],
];

t.test('every row of the command-line table', async (t) => {
  const shell = await ShellParser.load();
  t.ok(ROWS.length >= 100, `${ROWS.length} command lines`);
  const wrong: string[] = [];
  for (const [line, pattern, denied] of ROWS) {
    const policy: PolicySet = { default: 'allow', rules: [{ tool: 'Bash', pattern, action: 'deny', source: 'install' }] };
    const d = decide(policy, { tool: 'Bash', provider: 'bash', targets: shell.commands(line), kind: 'text' });
    if ((d.action === 'deny') !== denied) wrong.push(`${JSON.stringify(line)} vs deny ${pattern}: ${d.action} (commands ${JSON.stringify(shell.commands(line))})`);
  }
  t.same(wrong, [], 'each line meets its rule exactly as the table says');
});

t.test('a line is decided per simple command: an allow never covers a denied part', async (t) => {
  const shell = await ShellParser.load();
  const policy: PolicySet = {
    default: 'ask',
    rules: [
      { tool: 'Bash', pattern: 'git *', action: 'allow', source: 'install' },
      { tool: 'Bash', pattern: 'ls*', action: 'allow', source: 'user' },
    ],
  };
  const at = (line: string) => decide(policy, { tool: 'Bash', provider: 'bash', targets: shell.commands(line), kind: 'text' });
  t.equal(at('git status && ls').action, 'allow');
  t.equal(at('git status && curl x').action, 'ask', 'curl is not allowed by `git *`: the default asks');
  t.same(at('git status && curl x').asked.map((a) => a.target), ['curl x'], 'only the part that asked is recorded');
});

t.test('a plain line split without the parser gives what the parser gives', async (t) => {
  const shell = await ShellParser.load();
  const differ: string[] = [];
  const check = (line: string) => {
    const fast = shell.commands(line);
    const parsed = shell.parsed(line);
    if (JSON.stringify(fast) !== JSON.stringify(parsed)) differ.push(`${JSON.stringify(line)}: ${JSON.stringify(fast)} vs ${JSON.stringify(parsed)}`);
  };
  for (const [line] of ROWS) check(line);
  // Random lines over the plain-line alphabet, with the words that change how the grammar reads a line.
  const alphabet = 'abcxyz019_./:=@%+,-';
  const special = ['sudo', 'env', 'xargs', 'sh', 'bash', 'X=1', 'time', 'export', 'if', 'for', '=', '-c', 'nice', 'timeout', '5', '/usr/bin/curl', 'find', '-exec', 'eval', 'git', 'push', '&&', '||', ';', '|', '&', 'a|b', 'x&&y', 'p;q', 'c&', '|&'];
  let seed = 28;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  let plain = 0;
  let joined = 0;
  for (let i = 0; i < 3000; i++) {
    const words = Array.from({ length: 1 + rand(5) }, () => (rand(3) ? special[rand(special.length)] : Array.from({ length: 1 + rand(6) }, () => alphabet[rand(alphabet.length)]).join('')));
    const line = `${' '.repeat(rand(2))}${words.join(' '.repeat(1 + rand(2)))}`;
    const split = plainCommands(line);
    if (split) plain++;
    if (split && split.length > 1) joined++;
    check(line);
  }
  t.ok(plain > 1000, `${plain} of 3000 random lines took the shortcut`);
  t.ok(joined > 200, `${joined} of them with operators`);
  t.same(differ, [], 'no line is split differently');
});

t.test('a line whose pipes are parsed as `;` gives what the parser gives', async (t) => {
  const shell = await ShellParser.load();
  const differ: string[] = [];
  let listed = 0;
  const check = (line: string) => {
    if (pipesAsLists(line) !== null) listed++;
    const [fast, parsed] = [shell.commands(line), shell.parsed(line)];
    if (JSON.stringify(fast) !== JSON.stringify(parsed)) differ.push(`${JSON.stringify(line)}: ${JSON.stringify(fast)} vs ${JSON.stringify(parsed)}`);
  };
  for (const [line] of ROWS) check(line);
  // Pipes next to everything else a `|` can be in a line: quotes, escapes, comments, heredocs,
  // case patterns, extended globs, arithmetic, regular expressions, expansions, other operators.
  const parts = [
    'ls', 'curl x', 'sh', 'grep "a|b"', "grep 'c|d'", 'echo a\\|b', '# c | d', 'sh -c "a | b | curl x"', 'cat <<E\n|x | y\nE\n', 'cat <<E\nx | y\nE\n', '$(a | b | c)', '`a | b`', '(a | b)',
    '{ a | b; }', 'f() { a | b; }', 'for f in a; do b | c; done', 'if a | b; then c; fi', '! a', 'x=1', 'X=$(a|b|curl x) y', 'echo "$(a | b)"', 'a 2>&1', 'a > f',
  ];
  // Where a `|` is no pipe: these lines are parsed as written.
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax, not a template
  const others = ['case $x in a|b) curl x;; esac', 'ls @(a|b)', 'echo $((1|2))', '[[ $x =~ a|b ]]', 'echo ${x:-a|b}', 'echo a >| f', 'a |& b'];
  const ops = [' | ', '|', ' |\n', ' | ', ' | ', ' | ', ' || ', ' && ', '; ', ' & ', '\n', ' '];
  const wrong = [' | | ', '|;', ' | #x\n', ' |', '| '];
  let seed = 1028;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return Math.floor((seed / 2 ** 31) * n); // the high bits: the low ones of this generator repeat soon
  };
  for (let i = 0; i < 3000; i++) {
    const part = () => (rand(12) ? parts[rand(parts.length)] : others[rand(others.length)]);
    let line = part();
    for (let k = rand(5); k >= 0; k--) line += (rand(12) ? ops[rand(ops.length)] : wrong[rand(wrong.length)]) + part();
    check(line);
  }
  t.ok(listed > 500, `${listed} lines had their pipes parsed as lists`);
  t.same(differ, [], 'no line is split differently');
});
