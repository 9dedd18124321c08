import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import t from 'tap';

/**
 * The trust boundary is built once (docs/trust-boundary.md): host code reaches a user's tree only through the
 * confined file layer (src/core/files/confine.ts, entry-ops.ts, folder-fs.ts and the file endpoints
 * built on them), and runners are exec only. This test fails when a file that is not listed here
 * starts using `node:fs`, so a new feature cannot quietly read or write a workspace by path: it
 * has to use the layer, or be listed here with the reason it never touches a user's tree.
 */
const repo = resolve(import.meta.dirname, '../..');

/** The layer itself: everything it does goes through descriptors opened without following links. */
const LAYER: Record<string, string> = {
  'src/core/files/confine.ts': 'opens and verifies the user and session folders, one component at a time from the workspaces root',
  'src/core/files/open-session.ts': 'the descriptor walk inside an opened session folder',
  'src/core/files/descriptors.ts': 'kernel paths through open descriptors; a folder opened O_DIRECTORY|O_NOFOLLOW',
  'src/core/files/confine-paths.ts': 'path rules and resolveNow: lstat/readlink by path answer a policy check only, never open a file',
  'src/core/files/entry-ops.ts': 'operations on walked entries (atomic replace, list, copy, remove)',
  'src/core/files/folder-fs.ts': 'FolderFs, the API everyone else uses',
  'src/core/files/routes.ts': 'file endpoints: rename/symlink/unlink on walked entries (at(dir, name))',
  'src/core/files/upload.ts': 'receives into a private temp folder, then renames onto walked entries',
  'src/core/files/zip.ts': 'zips a walked folder through descriptors',
  'src/core/files/read-lines.ts': 'reads an already opened FileHandle (type import)',
  'src/core/files/quota.ts': "counts a user's bytes by a descriptor walk of their folder (lstat, links never followed)",
  'src/core/files/command-quota.ts': "after a command: a descriptor walk of the user's folder; what it added past the quota removed or cut back through those descriptors",
  'src/core/files/tree-io.ts': "a user's whole tree for backup and restore, through descriptors; links kept as links",
  'src/core/files/tree-sync.ts': 'a session folder as checkpoints read and rewind it, through descriptors; links kept as links',
  'src/core/tools/files/glob.ts': 'mtime of kernel paths given by the walk (/proc/self/fd/N/name)',
  'src/core/tools/files/grep-worker.mjs': 'reads kernel paths given by the walk, O_NOFOLLOW',
  'src/core/tools/files/index.ts': 'FileHandle type of entries opened by the layer',
  'src/core/tools/files/guard.ts': 'FileHandle type of the entry a file tool opened (its policy check)',
  'src/features/backup/staged-tree.ts': "a restore's entries, written through descriptors below a private staging folder (the layer's at())",
  'src/features/apps/serve.ts': 'FileHandle type of published files opened by the layer',
};

/** Files that use the filesystem for the operator's own files, never for a user's tree. */
const OPERATOR: Record<string, string> = {
  'plugins/mcp/npx.ts': "AGENTSVC_HOME/shared/npm: the host's npm fetch of MCP server packages, shown read-only to computers (no user tree)",
  'src/platform/config/index.ts': 'config.json',
  'src/platform/db/embedded.ts': 'the embedded PostgreSQL folder',
  'src/platform/lib/system-user.ts': 'lets the service\'s system users traverse to their folders (root installs)',
  'src/cli/home-access.ts': 'the folders above AGENTSVC_HOME/workspaces: which exist, their modes (root installs)',
  'src/platform/db/pg-process.ts': 'PostgreSQL process files',
  'src/platform/db/home-lock.ts': "the home's lock file (run/up.lock) that `up` holds",
  'src/service.ts': 'the logs folder',
  'src/features/users/bootstrap.ts': 'admin.key',
  'src/features/model-keys/sealing.ts': 'AGENTSVC_HOME/secret.key, the key that encrypts personal model keys',
  'src/platform/lib/assets.ts': 'files shipped in the package',
  'src/core/models/tokenizer.ts': 'the tokenizer ranks shipped with js-tiktoken',
  'src/features/solutions/catalog.ts': 'solution packages under templates/ and plugins',
  'src/core/tools/web/webfetch.ts': 'its worker script',
  'src/features/diagnostics/checks.ts': 'statfs and modes of AGENTSVC_HOME',
  'src/features/diagnostics/local.ts': 'local checks of AGENTSVC_HOME',
  'src/features/frontend-config/routes.ts': 'AGENTSVC_HOME/frontend_config',
  'src/platform/server/console.ts': 'the built web console shipped in the package',
  'src/features/plugin-host/loader.ts': "the package.json of a plugin folder the operator names in AGENTSVC_PLUGINS",
  'src/features/skills/routes.ts': 'global skills in AGENTSVC_HOME/skills (operator and plugins)',
  'plugins/skills/library.ts': 'global skills in AGENTSVC_HOME/skills (operator and plugins)',
  'plugins/integrations/index.ts': "an integration's OpenAPI file named by the operator",
  'src/features/portability/routes.ts': 'streams an upload to a private temp folder of the service',
  'src/features/portability/import.ts': 'stages an archive in that private folder; moves it in through the session folder descriptor',
  'src/features/portability/read-archive.ts': 'reads the uploaded archive and stages its files in that private folder',
  'src/features/backup/backup.ts': 'AGENTSVC_HOME config files and the list of user folders; user trees go through tree-io.ts',
  'src/features/backup/restore.ts': 'the archive the person names; a private temp copy of its config.json',
  'src/features/timetravel/object-store.ts': 'the service-owned checkpoint stores (<workspaces>/.snapshots); session folders go through tree-sync.ts',
  'src/features/backup/restore-target.ts': 'AGENTSVC_HOME and the service-owned checkpoint stores of the target; user trees go through tree-io.ts',
  'src/cli/commands/backup.ts': 'the CLI: the archive the person names',
  'src/cli/terminal/options.ts': 'the CLI: config and key files of the person running it',
  'src/cli/terminal/credentials.ts': "the CLI (agentsvc login): the person's sign-in credentials file, mode 0600",
  'src/cli/terminal/endpoint.ts': "the CLI (agentsvc init): the config.json of the person's AGENTSVC_HOME",
  'src/cli/terminal/transfer.ts': 'the CLI: the archive the person names',
  'src/cli/commands/export.ts': 'the CLI: the archive the person names',
  'src/cli/terminal/logs.ts': 'the CLI: reads the service log of AGENTSVC_HOME',
  'src/cli/terminal/slash.ts': 'the CLI: /export checks whether the archive the person names exists',
  'src/cli/commands/keys/delete.ts': "the CLI: reads admin.key so it does not delete the key it runs with",
  'plugins/skills/shipped/csv-insights/scripts/profile.mjs': 'a skill script: runs inside the computer',
  'plugins/skills/shipped/repo-map/scripts/map.mjs': 'a skill script: runs inside the computer',
};

/** Runners prepare the workspaces root and a user's top folder (mode, owner); they never read or write inside. */
const RUNNERS: Record<string, string> = {
  'runners/shared.ts': 'moves a removed workspace aside; cwd check',
  'runners/local/index.ts': 'creates the user folder 0700 and hands it to the sandbox uid',
  'runners/local/probe.ts': 'makes the workspaces root private and a throwaway folder to try bubblewrap in; looks up host tools on PATH',
  'runners/local/sandbox.ts': 'passwd/group files and the read-only host binds of bubblewrap',
  'runners/local/net.ts': "opens a sandbox's network namespace (/proc/<pid>/ns/net) for pasta",
  'runners/docker/index.ts': 'creates the bind-mount source folder',
  'runners/docker/network.ts': 'looks up pasta on the host (access X_OK)',
  'runners/docker/shared.ts': 'creates the home\'s shared folder (the npm shelf) bound read-only into containers',
  'runners/path-denies.ts': 'lists the entries a path rule covers (a walk by descriptors, links never followed) and the empty nodes bound over them',
};

/** Known by-path access still to move onto the layer (each a tracked follow-up, never a new entry). */
const DEBT: Record<string, string> = {};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (f === 'node_modules' || f === 'dist') return [];
    return statSync(p).isDirectory() ? files(p) : /\.(ts|mjs|js)$/.test(f) ? [p] : [];
  });
}

const FS_IMPORT = /from ['"](node:)?fs(\/promises)?['"]|require\(['"](node:)?fs(\/promises)?['"]\)|import\(['"](node:)?fs(\/promises)?['"]\)/;

t.test('only the file layer and listed operator code use node:fs', async (t) => {
  const listed = { ...LAYER, ...OPERATOR, ...RUNNERS, ...DEBT };
  const users = ['src', 'plugins', 'runners', 'templates']
    .flatMap((d) => files(join(repo, d)))
    .filter((f) => FS_IMPORT.test(readFileSync(f, 'utf8')))
    .map((f) => relative(repo, f));
  const unlisted = users.filter((f) => !(f in listed));
  t.same(unlisted, [], 'every file using node:fs is the layer or listed with the reason it never touches a user tree');
  const stale = Object.keys(listed).filter((f) => !users.includes(f));
  t.same(stale, [], 'no stale entries (a file that stopped using node:fs leaves the list)');
  t.comment(`by-path debt left: ${Object.keys(DEBT).join(', ')}`);
});

t.test('runners and plugins get no host path of a workspace', async (t) => {
  const types = readFileSync(join(repo, 'runners/types.ts'), 'utf8');
  const computer = /export interface Computer \{([\s\S]*?)\n\}/.exec(types)?.[1] ?? '';
  t.ok(computer.includes('exec('), 'Computer execs');
  t.notMatch(computer, /hostRoot|readFile|writeFile/, 'Computer has no host root and no by-path file IO');
  const api = readFileSync(join(repo, 'src/features/plugin-host/api.ts'), 'utf8');
  t.notMatch(api, /hostDir|hostRoot|resolve\(path/, 'the plugin API hands out no host path');
  for (const f of files(join(repo, 'src')).concat(files(join(repo, 'plugins')), files(join(repo, 'templates')))) {
    const text = readFileSync(f, 'utf8');
    if (/\.hostRoot\b|readWorkspaceFile|writeWorkspaceFile|workspace\.resolve\(/.test(text)) t.fail(`${relative(repo, f)} reaches a workspace by host path`);
  }
});
