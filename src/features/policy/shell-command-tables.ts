/**
 * The tables the Bash-rule checker reads commands by (docs/policy-commands.md), as data apart from
 * the code reading them (shell-commands.ts): programs it refuses to see through, the shells whose
 * `-c` scripts it parses, variables whose value runs as code, tools that run a command in an
 * environment they set up, and each wrapper's options as its own getopt reads them. An option a
 * table does not list makes the line unsplittable, so a table errs only towards asking more often.
 */

/**
 * Programs and builtins that run code this parser does not read, or change how the shell reads
 * later words: their lines match every rule. Shells other than the POSIX/bash family read
 * another language (zsh's glob qualifiers run code, fish and csh differ throughout).
 */
export const OPAQUE = new Set([
  'alias',
  'hash',
  'trap',
  'enable',
  'bind',
  'complete',
  'compgen',
  'fc',
  'coproc',
  'let',
  'caller',
  'script',
  'unshare',
  'su',
  'runuser',
  'parallel',
  'sem',
  'chroot',
  'nsenter',
  'systemd-run',
  'systemd-nspawn',
  'firejail',
  'bwrap',
  'strace',
  'ltrace',
  'valgrind',
  'gdb',
  'perf',
  'xvfb-run',
  'dbus-run-session',
  'dbus-launch',
  'ssh-agent',
  'fakeroot',
  'fakechroot',
  'faketime',
  'numactl',
  'prlimit',
  'setpriv',
  'capsh',
  'sg',
  'newgrp',
  'pkexec',
  'proot',
  'tmux',
  'screen',
  'expect',
  'unbuffer',
  'at',
  'batch',
  'entr',
  'chronic',
  'cgexec',
  'schroot',
  'machinectl',
  'run-parts',
  'start-stop-daemon',
  'daemonize',
  'runcon',
  'chpst',
  'setarch',
  'linux32',
  'linux64',
  'i386',
  'x86_64',
  'catchsegv',
  'eatmydata',
  'torsocks',
  'proxychains',
  'proxychains4',
  'tsocks',
  'rlwrap',
  'sshpass',
  'flatpak-spawn',
  'toolbox',
  'distrobox',
  'lxc-attach',
  'lxc-execute',
  'ld.so',
  'nix-shell',
  'hyperfine',
  'zsh',
  'ksh',
  'ksh93',
  'mksh',
  'oksh',
  'pdksh',
  'yash',
  'posh',
  'fish',
  'csh',
  'tcsh',
  'pwsh',
  'elvish',
  'nu',
  'xonsh',
]);

/** Shells of the language parsed here (bash and POSIX sh): `-c` scripts are parsed in turn. */
export const SHELLS = new Set(['sh', 'bash', 'dash', 'ash', 'rbash', 'hush']);

/**
 * Long options of a bash/sh command line that take no value and change nothing the checker reads;
 * short flags likewise (`-c`, `-o`/`-O`, `-s`, `-i` are read apart).
 */
export const SHELL_LONG_FLAGS = ['--norc', '--noprofile', '--login', '--posix', '--restricted', '--verbose', '--version', '--help', '--noediting', '--debugger', '--protected'];
export const SHELL_FLAGS = 'abefhkmnptuvxBCEHPTlrD';

/** Variables whose value the shell runs or reads as code (see dangerousName in shell-commands.ts). */
export const DANGEROUS = new Set(['PS0', 'PS1', 'PS2', 'PS3', 'PS4', 'PROMPT_COMMAND', 'BASH_ENV', 'ENV', 'SHELLOPTS', 'BASHOPTS', 'BASH_ALIASES', 'BASH_CMDS', 'BASH_XTRACEFD']);

/** A getopt-style option table: short flags, short options taking a value, and the long forms. */
export interface Options {
  flags?: string;
  valued?: string;
  long?: string[];
  longValued?: string[];
  /** Long options whose value is only given as `--name=value`. */
  longOptional?: string[];
  /** `nice -10`: a number as an option. */
  numeric?: boolean;
  /** Options that make the wrapper run no command (or run one we do not model): unsplittable. */
  refuse?: string;
}

/**
 * Tools that run a command in an environment they set up (`uv run pytest`, `npm exec -- vitest`,
 * `bundle exec rake`): the subcommand that runs one (none: the tool itself runs it) and how many
 * literal words (a user, a folder) come before the command. Their options are not modelled: any
 * option before the command makes the line unsplittable.
 */
export const RUNNERS: Record<string, [sub: string[], before: number]> = {
  npm: [['exec', 'x'], 0],
  pnpm: [['exec', 'dlx'], 0],
  yarn: [['exec', 'dlx'], 0],
  bun: [['x', 'exec'], 0],
  uv: [['run'], 0],
  poetry: [['run'], 0],
  pipenv: [['run'], 0],
  bundle: [['exec'], 0],
  conda: [['run'], 0],
  mamba: [['run'], 0],
  micromamba: [['run'], 0],
  pixi: [['run', 'exec'], 0],
  hatch: [['run'], 0],
  pdm: [['run'], 0],
  rye: [['run'], 0],
  mise: [['exec', 'x'], 0],
  asdf: [['exec'], 0],
  rbenv: [['exec'], 0],
  pyenv: [['exec'], 0],
  nodenv: [['exec'], 0],
  direnv: [['exec'], 1],
  op: [['run'], 0],
  doppler: [['run'], 0],
  'aws-vault': [['exec'], 1],
  npx: [[], 0],
  pnpx: [[], 0],
  bunx: [[], 0],
  uvx: [[], 0],
  pipx: [['run'], 0],
  tini: [[], 0],
  'dumb-init': [[], 0],
  ccache: [[], 0],
  distcc: [[], 0],
  gosu: [[], 1],
  'su-exec': [[], 1],
  setuidgid: [[], 1],
  dotenv: [[], 0],
  catatonit: [[], 0],
};

/** Each wrapper's options (see Options): how sudo, env, timeout, ... read their own command line. */
export const WRAPPER_OPTIONS = {
  env: {
    flags: 'i0v',
    valued: 'uCS',
    long: ['ignore-environment', 'null', 'debug', 'list-signal-handling'],
    longValued: ['unset', 'chdir', 'split-string'],
    longOptional: ['block-signal', 'default-signal', 'ignore-signal'],
  },
  xargs: {
    flags: '0prtxob',
    valued: 'IaEdLnPs',
    long: ['null', 'no-run-if-empty', 'verbose', 'interactive', 'exit', 'open-tty', 'show-limits'],
    longValued: ['arg-file', 'delimiter', 'max-args', 'max-procs', 'max-chars', 'process-slot-var'],
    longOptional: ['replace', 'max-lines', 'eof'],
  },
  watch: {
    flags: 'bcegptwxr',
    valued: 'nq',
    long: ['beep', 'color', 'no-color', 'errexit', 'chgexit', 'exec', 'no-title', 'precise', 'no-wrap', 'no-linewrap', 'no-rerun'],
    longValued: ['interval', 'equexit'],
    longOptional: ['differences'],
  },
  flock: {
    flags: 'sexnouF',
    valued: 'wEc',
    long: ['shared', 'exclusive', 'nonblock', 'nb', 'close', 'unlock', 'no-fork', 'verbose'],
    longValued: ['timeout', 'wait', 'conflict-exit-code', 'command'],
  },
  sudo: {
    flags: 'AbEeHiKklnPSsVvN',
    valued: 'CDgprtTUuR',
    long: [
      'askpass',
      'background',
      'edit',
      'set-home',
      'login',
      'remove-timestamp',
      'reset-timestamp',
      'list',
      'non-interactive',
      'preserve-groups',
      'stdin',
      'shell',
      'version',
      'validate',
      'bell',
      'no-update',
    ],
    longValued: ['close-from', 'chdir', 'group', 'prompt', 'chroot', 'role', 'type', 'command-timeout', 'other-user', 'user', 'host'],
    longOptional: ['preserve-env'],
  },
  doas: { flags: 'nsL', valued: 'uC' },
  nice: { valued: 'n', longValued: ['adjustment'], numeric: true },
  command: { flags: 'pvV' },
  exec: { flags: 'cl', valued: 'a' },
  time: { flags: 'apvqV', valued: 'fo', long: ['append', 'portability', 'verbose', 'quiet'], longValued: ['format', 'output'] },
  setsid: { flags: 'cfw', long: ['ctty', 'fork', 'wait'] },
  stdbuf: { valued: 'ioe', longValued: ['input', 'output', 'error'] },
  ionice: { flags: 'tpPu', valued: 'cn', long: ['ignore'], longValued: ['class', 'classdata'], refuse: 'pPu' },
  chrt: {
    flags: 'bdfiorRmaevp',
    valued: 'TPD',
    long: ['batch', 'deadline', 'fifo', 'idle', 'other', 'rr', 'reset-on-fork', 'all-tasks', 'verbose', 'max'],
    longValued: ['sched-runtime', 'sched-period', 'sched-deadline'],
    refuse: 'p',
  },
  taskset: { flags: 'acp', long: ['all-tasks', 'cpu-list'], refuse: 'p' },
  timeout: { flags: 'v', valued: 'sk', long: ['preserve-status', 'foreground', 'verbose'], longValued: ['signal', 'kill-after'] },
} satisfies Record<string, Options>;
