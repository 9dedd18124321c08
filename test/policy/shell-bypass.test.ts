// biome-ignore-all lint/suspicious/noTemplateCurlyInString: shell syntax, not templates
import t from 'tap';
import { decide, type PolicySet } from '../../src/features/policy/rules.js';
import { ShellParser } from '../../src/features/policy/shell.js';

// Command patterns fail closed (docs/policy-commands.md). Every form below made a file under
// `deny Bash touch*` when the checker said "allowed" for what it did not understand (issue 40,
// finding 1), or is the same trick through another door; each must now be denied. `null`: the
// line is unsplittable (matches every rule); otherwise the targets it must contain.
const DENIED: [line: string, expect: null | string][] = [
  // the review's forms, as reproduced live
  ["$'\\x74ouch' p1", null],
  ['/usr/bin/tou?h p2', null],
  ['tou\\\nch p3', null],
  ["shopt -s expand_aliases\nalias t='touch'\nt p4", null],
  ['hash -p /usr/bin/touch t; t p5', null],
  ["trap 'touch p6' EXIT", null],
  ["bash -c -- 'touch p7'", 'touch p7'],
  ["env --split-string='touch p8'", 'touch p8'],
  ['x=\'$(touch p9)\'; echo "${x@P}"', null],
  ["a='b[$(touch p10)]'; echo $((a))", null],
  ['tou{ch,} p11', null],
  ["flock /tmp/l -c 'touch p12'", 'touch p12'],
  ['bash <<EOF\ntouch p13\nEOF', null],
  ["echo 'touch p14' | sh", null],
  // what the parser missed
  ["script -qc 'touch p' /dev/null", null],
  ['unshare touch p', null],
  ['taskset 1 touch p', 'touch p'],
  ['taskset -c 0 touch p', 'touch p'],
  ['coproc touch p', null],
  ["source <(echo 'touch p')", null],
  ['sudo -iu root touch p', 'touch p'],
  // the same doors, other keys
  ["$'touch' p", null],
  ['/usr/bin/tou[c]h p', null],
  ['/usr/bin/touc* p', null],
  ['{touch,} p', null],
  ['T=touch; $T p', null],
  ['"$T" p', null],
  ['$(echo touch) p', null],
  ['`echo touch` p', null],
  ['${U:-touch} p', null],
  ['$"touch" p', null],
  ['touc${T:4} p', null],
  ['x=1\n\\touch p', null],
  ['echo hi; tou\\\nch p', null],
  ['BASH_CMDS[t]=/usr/bin/touch; t p', null],
  ['BASH_ALIASES[t]=touch', null],
  ["PS4='$(touch p)'; set -x; :", null],
  ["env 'BASH_FUNC_f%%=() { touch p; }' bash -c f", null],
  ["declare -n r='a[$(touch p)]'; : $r", null],
  ["declare -i n; n='a[$(touch p)]'", null],
  ["x='a[$(touch p)]'; [[ $x -eq 0 ]]", null],
  ["test -v 'a[$(touch p)]'", null],
  ['[[ -v a[$(touch p)] ]]', null],
  ["read 'a[$(touch p)]' <<< 1", null],
  ["printf -v 'a[$(touch p)]' x", null],
  ["mapfile -C 'touch p' -c 1 <<< x", null],
  ["compgen -C 'touch p' x", null],
  ['echo ${!x}', null],
  ['echo ${x:$(touch p)}', null],
  ['echo ${x#$(touch p)}', null],
  ['for ((i=0; i<n; i++)); do :; done', null],
  ['((n++))', null],
  ['let n=1', null],
  ['x=\'touch p\'; eval "$x"', null],
  ['eval $x', null],
  ["bash <<< 'touch p'", null],
  ["sh -s < <(echo 'touch p')", null],
  [". /dev/stdin <<< 'touch p'", null],
  ["bash /dev/stdin <<< 'touch p'", null],
  ["printf '%s\\n' 'touch p' | bash", null],
  ['bash', null],
  ["zsh -c 'touch p'", null],
  ["bash --rcfile <(echo 'touch p') -ic :", null],
  ["bash -O expand_aliases -c 't p'", null],
  ['echo touch | xargs -I{} {} p', null],
  ['find /usr/bin -name touch -exec {} p \\;', null],
  ['find . -exec true \\; -exec touch p \\;', 'touch p'],
  ["env -S 'touch p'", 'touch p'],
  ["env -iS'touch p'", 'touch p'],
  ["env --split='touch p'", null],
  ["env -S 'tou\\_ch p'", null],
  ['env -- touch p', 'touch p'],
  ['nice -5 touch p', 'touch p'],
  ['timeout --signal=TERM 5 touch p', 'touch p'],
  ['timeout -s KILL 5 touch p', 'touch p'],
  ['flock -w 1 /tmp/l touch p', 'touch p'],
  ['setsid -w touch p', 'touch p'],
  ['(exec touch p)', 'touch p'],
  ['builtin command touch p', 'touch p'],
  ['busybox touch p', 'touch p'],
  ['toybox touch p', 'touch p'],
  ["busybox sh -c 'touch p'", 'touch p'],
  ["watch -n 1 'touch p'", 'touch p'],
  ['xargs touch < list', 'touch *'],
  ['echo touch p | xargs env', null],
  ['echo touch p | xargs busybox', null],
  ['xargs -I{} touch {}', 'touch {}'],
  ['find . -exec env {} \\;', null],
  ['echo `echo \\`touch p\\``', null],
  ['echo `echo \\$(touch p)`', null],
  ['cat <<EOF\n$(touch p)\nEOF', 'touch p'],
  ['cat <<EOF\n${x@P}\nEOF', null],
  [': <<< "$(touch p)"', 'touch p'],
  ['echo "$(touch p)"', 'touch p'],
  ['echo $"$(touch p)"', 'touch p'],
  ['su -c "touch p"', null],
  ['runuser -u u -- touch p', null],
  ["parallel 'touch {}' ::: p", null],
  ['chroot / touch p', null],
  ['ld-linux-x86-64.so.2 /usr/bin/touch p', null],
  ['sudo -s', null],
  ['sudo --preserve-env=PATH touch p', 'touch p'],
  ['sudo -h', null],
  ['nice --adj=5 touch p', null],
  ['timeout $T touch p', null],
  // tools that run a command in an environment: seen through without options, unsplittable with
  ['npm exec -- touch p', 'touch p'],
  ['npx touch p', 'touch p'],
  ['uv run touch p', 'touch p'],
  ['uv run --with x touch p', null],
  ['bundle exec touch p', 'touch p'],
  ['direnv exec . touch p', 'touch p'],
  ['gosu nobody touch p', 'touch p'],
  ["nix-shell --run 'touch p'", null],
  ["hyperfine 'touch p'", null],
  ['sudo $OPT touch p', null],
];

// Lines the checker must keep splitting exactly as before, so that allow rules keep working.
const SPLIT: [line: string, targets: string[]][] = [
  ['npm test', ['npm test']],
  ['git status && git diff | head', ['git status', 'git diff', 'head']],
  ['cd x; ls', ['cd x', 'ls']],
  ['git status && git diff --stat', ['git status', 'git diff --stat']],
  ['npm test 2>&1 | tee out.log; echo "exit $?"', ['npm test', 'tee out.log', 'echo exit *']],
  ['for f in $(find . -name "*.ts"); do wc -l "$f"; done | sort -n | tail -5', ['find . -name *.ts', 'wc -l *', 'sort -n', 'tail -5']],
  [
    "sh -c 'cd /tmp && env X=1 npm publish --access public'",
    ['sh -c cd /tmp && env X=1 npm publish --access public', 'cd /tmp', 'env X=1 npm publish --access public', 'npm publish --access public'],
  ],
  ['rm -rf $X', ['rm -rf *']],
  ['curl -o "$OUT" https://x/$P', ['curl -o * https://x/*']],
  ['ls > out.txt 2>&1', ['ls']],
  ['if [ -f a ]; then cat a; else echo none; fi', ['cat a', 'echo none']],
  ['case "$1" in start) run;; *) echo "$1";; esac', ['run', 'echo *']],
  ['export PATH="$HOME/bin:$PATH"; make -j4', ['make -j4']],
  ['x=$(git rev-parse HEAD) && echo "$x"', ['git rev-parse HEAD', 'echo *']],
  ['cat <<EOF > f.txt\nhello $USER\nEOF', ['cat']],
  ["cat <<'EOF'\n$(not run)\nEOF", ['cat']],
  ['python3 -c "print(1)"', ['python3 -c print(1)']],
  ['sudo -u postgres psql -c "select 1"', ['sudo -u postgres psql -c select 1', 'psql -c select 1']],
  ['[[ -f a && 2 -gt 1 ]] && ls', ['ls']],
  ['echo ${x:-default} ${#x} ${x%.*} ${a[0]} ${x:1:2}', ['echo * * * * *']],
  ['ls \\\n  -la', ['ls -la']],
  ['f() { git status; }; f', ['git status', 'f']],
  ['bash script.sh arg', ['bash script.sh arg']],
  ['. ./env.sh', ['. ./env.sh']],
  ['uv run pytest -x', ['uv run pytest -x', 'pytest -x']],
  ['npm run build && npm test', ['npm run build', 'npm test']],
];

const policy: PolicySet = { default: 'allow', rules: [{ tool: 'Bash', pattern: 'touch*', action: 'deny', source: 'install' }] };

t.test('every bypass form is denied by `deny Bash touch*`', async (t) => {
  const shell = await ShellParser.load();
  const wrong: string[] = [];
  for (const [line, expect] of DENIED) {
    const targets = shell.commands(line);
    const d = decide(policy, { tool: 'Bash', provider: 'bash', targets, kind: 'text' });
    if (d.action !== 'deny') wrong.push(`${JSON.stringify(line)}: ${d.action} (${JSON.stringify(targets)})`);
    else if (expect === null ? targets !== null : !targets?.includes(expect))
      wrong.push(`${JSON.stringify(line)}: denied, but as ${JSON.stringify(targets)}, expected ${JSON.stringify(expect)}`);
  }
  t.same(wrong, [], `${DENIED.length} forms, each denied as the table says`);
});

t.test('ordinary lines split into exactly their commands; an expansion in an argument reads `*`', async (t) => {
  const shell = await ShellParser.load();
  for (const [line, targets] of SPLIT) t.same(shell.commands(line), targets, JSON.stringify(line));
});

t.test('an allow rule keeps covering an ordinary line', async (t) => {
  const shell = await ShellParser.load();
  const allow: PolicySet = { default: 'ask', rules: [{ tool: 'Bash', pattern: 'git *', action: 'allow', source: 'install' }] };
  const at = (line: string) => decide(allow, { tool: 'Bash', provider: 'bash', targets: shell.commands(line), kind: 'text' }).action;
  t.equal(at('git status && git diff --stat'), 'allow');
  t.equal(at('git log $REF'), 'allow', 'an expansion in an argument is matched by `*`');
  // An unsplittable line matches every deny and ask pattern but no allow pattern (rules.ts): the
  // default decides it.
  t.equal(at('$GIT status'), 'ask', 'an expansion in the command name: unsplittable');
  t.equal(at('git status; eval "$X"'), 'ask', 'eval of a non-literal: unsplittable');
});
