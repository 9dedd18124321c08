import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { SessionFolders } from '../../src/core/files/session-folder.js';
import { decide, type PolicySet, type SourcedRule } from '../../src/features/policy/rules.js';
import { ShellParser } from '../../src/features/policy/shell.js';
import { callFacts } from '../../src/features/policy/targets.js';

// docs/policy.md: what a rule's `tool` and `pattern` are matched on, for the tools that are not Bash
// (command-table.test.ts) and not plain file paths (paths.test.ts): MCP tools by a glob over tool
// names or by provider, other tools' arguments as JSON text, a WebFetch URL's host, Glob's pattern.
t.test('tool globs, providers, hosts, JSON arguments and Glob patterns', async (t) => {
  const shell = await ShellParser.load();
  const root = mkdtempSync(join(tmpdir(), 'policy-targets-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const ws = new SessionFolders(root, null).forSession('user_t', 'sess_t');
  const rules: SourcedRule[] = [
    { tool: 'mcp__github__*', pattern: '*"repo":"acme/secret"*', action: 'deny', source: 'install' },
    { tool: 'mcp__github__*', action: 'ask', source: 'install' },
    { tool: 'mcp', pattern: '*drop table*', action: 'deny', source: 'user' },
    { tool: 'WebFetch', pattern: '*.internal.example', action: 'deny', source: 'install' },
    { tool: 'Glob', pattern: 'secrets/**', action: 'deny', source: 'install' },
    { tool: 'Read', pattern: 'secrets/**', action: 'deny', source: 'install' },
  ];
  const policy: PolicySet = { default: 'allow', rules };
  const at = (name: string, provider: string, args: Record<string, unknown>) => decide(policy, callFacts(shell, { name, provider }, args, ws, true));
  const cases: [name: string, provider: string, args: Record<string, unknown>, action: string][] = [
    ['mcp__github__create_issue', 'mcp', { repo: 'acme/secret', title: 'x' }, 'deny'],
    ['mcp__github__create_issue', 'mcp', { repo: 'acme/app', title: 'x' }, 'ask'],
    ['mcp__gitlab__create_issue', 'mcp', { repo: 'acme/secret' }, 'allow'],
    ['mcp__db__query', 'mcp', { sql: 'drop table users' }, 'deny'],
    ['WebFetch', 'webfetch', { url: 'https://API.Internal.Example:8443/x' }, 'deny'],
    ['WebFetch', 'webfetch', { url: 'https://internal.example.org/' }, 'allow'],
    ['WebFetch', 'webfetch', { url: 'not a url' }, 'deny'],
    ['Glob', 'file_ops', { pattern: 'secrets/*' }, 'deny'],
    ['Glob', 'file_ops', { pattern: '**/*.ts', path: 'src' }, 'allow'],
    ['Glob', 'file_ops', { pattern: '*', path: './src/../secrets' }, 'deny'],
    ['Read', 'file_ops', { file_path: 'src/../secrets/key' }, 'deny'],
    ['Read', 'file_ops', { file_path: '../../etc/passwd' }, 'deny'],
    ['Read', 'file_ops', { file_path: 'src/app.ts' }, 'allow'],
  ];
  const wrong = cases.map(([name, provider, args, action]) => [name, args, at(name, provider, args).action, action]).filter(([, , got, want]) => got !== want);
  t.same(wrong, [], 'each call decided as expected (an unreadable URL or a path out of the workspace matches every rule)');
});

// docs/policy-paths.md: `{tool: "*", paths}` is a path rule for the file tools (and the sandbox),
// never a pattern over a Bash line or another tool's JSON; `access: "write"` refuses writes only.
t.test('path rules: {tool: "*", paths} and access: write', async (t) => {
  const shell = await ShellParser.load();
  const root = mkdtempSync(join(tmpdir(), 'policy-targets-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const ws = new SessionFolders(root, null).forSession('user_t', 'sess_t');
  const policy: PolicySet = {
    default: 'allow',
    rules: [
      { tool: '*', paths: 'secrets/**', action: 'deny', source: 'install' },
      { tool: '*', paths: 'vendor/**', action: 'deny', access: 'write', source: 'user' },
    ],
  };
  const at = (name: string, provider: string, args: Record<string, unknown>) => decide(policy, callFacts(shell, { name, provider }, args, ws, true));
  const cases: [name: string, provider: string, args: Record<string, unknown>, action: string][] = [
    ['Read', 'file_ops', { file_path: 'secrets/k' }, 'deny'],
    ['Write', 'file_ops', { file_path: 'secrets/k', content: '' }, 'deny'],
    ['Grep', 'file_ops', { pattern: 'x', path: 'secrets' }, 'deny'],
    ['Read', 'file_ops', { file_path: 'vendor/lib.js' }, 'allow'],
    ['Write', 'file_ops', { file_path: 'vendor/lib.js', content: '' }, 'deny'],
    ['Edit', 'file_ops', { file_path: 'vendor/lib.js', old_string: 'a', new_string: 'b' }, 'deny'],
    ['Bash', 'bash', { command: 'cat secrets/k' }, 'allow'],
    ['mcp__fs__read', 'mcp', { path: 'secrets/k' }, 'allow'],
  ];
  const wrong = cases.map(([name, provider, args, action]) => [name, args, at(name, provider, args).action, action]).filter(([, , got, want]) => got !== want);
  t.same(wrong, [], 'file tools are decided on the path; Bash and MCP are left to the sandbox');
  t.same(at('Write', 'file_ops', { file_path: 'vendor/x', content: '' }).rule, { tool: '*', paths: 'vendor/**', action: 'deny', access: 'write' });
});
