import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import t from 'tap';

/**
 * One name per concept (docs/architecture.md "Names"): "workspace" in a code name is a team
 * workspace, and "task" says which of the five kinds it is. A file, folder or exported name that
 * says plain "workspace" or "task" fails here, so the meanings that collided (three workspaces,
 * five tasks) cannot collide again. Public names (REST paths, socket events, env variables, tables,
 * config keys) are not code names and are not read; the plugin API's names are listed in PUBLIC.
 */
const repo = resolve(import.meta.dirname, '../..');
const CODE = ['src', 'runners', 'plugins'];
const NAMED = [...CODE, 'test', 'bench'];

const CONCEPTS = [
  { word: /workspace/i, means: /team-?workspace/i, say: 'a team workspace is TeamWorkspace…; a session folder is SessionFolder(s)/SessionSandbox/FolderFs; the AGENTSVC_WORKSPACES root is the folders root' },
  { word: /task/i, means: /(scheduled|session|issue|background|client)-?task/i, say: 'say which task: ScheduledTask…, SessionTask…, IssueTaskRun…, BackgroundTask…, ClientTask…' },
];

/** Names in the public plugin API (src/features/plugin-host/api.ts): kept for the plugins written against it. */
const PUBLIC = new Set(['PluginWorkspace']);

/** Names of database migrations follow the tables they make (a public contract), not the code. */
const isMigration = (p: string) => p.includes('/db/migrations/');

function entries(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (f === 'node_modules' || f === 'dist') return [];
    return statSync(p).isDirectory() ? [p, ...entries(p)] : [p];
  });
}

/** Each name the concept rules refuse, with what to say instead. */
export function misnamed(names: string[]): string[] {
  return names.flatMap((n) => CONCEPTS.filter((c) => c.word.test(n) && !c.means.test(n) && !PUBLIC.has(n)).map((c) => `${n}: ${c.say}`));
}

t.test('the rules refuse a plain name and take a qualified one', async (t) => {
  t.same(misnamed(['Workspaces', 'TaskStore', 'workspace-fs.ts', 'tasks']).length, 4);
  t.same(misnamed(['TeamWorkspaceStore', 'teamWorkspaceRoutes', 'SessionTaskStore', 'scheduled-tasks.test.ts', 'IssueTaskRuns', 'BackgroundTask', 'ClientTaskParams', 'PluginWorkspace']), []);
});

t.test('file and folder names say which workspace or task they are', async (t) => {
  const paths = NAMED.flatMap((r) => entries(join(repo, r))).map((p) => relative(repo, p)).filter((p) => !isMigration(p));
  t.ok(paths.includes('src/core/files/folder-fs.ts'), 'tree read');
  const names = [...new Set(paths.map((p) => p.split('/').at(-1)!.replace(/\.(test\.)?(ts|tsx|mjs|js)$/, '')))];
  t.same(misnamed(names), []);
});

t.test('exported names say which workspace or task they are', async (t) => {
  const files = CODE.flatMap((r) => entries(join(repo, r))).filter((p) => /\.tsx?$/.test(p) && !isMigration(p));
  const exported = files.flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/^export (?:default )?(?:async )?(?:abstract )?(?:class|interface|type|function|const|let|enum) ([A-Za-z_$][\w$]*)/gm)].map((m) => m[1]));
  t.ok(exported.includes('SessionFolders') && exported.includes('TeamWorkspaceStore'), `exports read (${exported.length})`);
  t.same(misnamed([...new Set(exported)]), []);
});
