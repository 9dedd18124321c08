import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import ts from 'typescript';

/**
 * The core is below the features at run time too, not only for imports (issue #41): a core module
 * needs no feature module, and what a core module provides mentions no feature, neither by an
 * import nor through declaration merging (`Provides['usage']`, or a feature re-opening a core
 * interface with `declare module`), which the import test cannot see. What a feature adds to a run
 * it contributes to the run hooks (docs/architecture.md).
 */
const src = resolve(import.meta.dirname, '../../src');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** The layer of a file under src/: core, features, platform, cli or the root. */
const layerOf = (root: string, file: string) => {
  const parts = relative(root, file).split('/');
  return parts.length > 1 ? parts[0] : '(root)';
};

interface Found {
  /** Module name -> its file and what it needs. */
  modules: Map<string, { file: string; needs: string[] }>;
  /** Provides key -> the file that declares it and the type text's node. */
  provides: Map<string, { file: string; type: ts.TypeNode; source: ts.SourceFile }>;
  /** Files that re-open another file's declarations (`declare module './x.js'`), with the file they re-open. */
  merges: { file: string; target: string }[];
}

function scan(files: Map<string, string>): Found {
  const found: Found = { modules: new Map(), provides: new Map(), merges: [] };
  for (const [file, text] of files) {
    // Only files that declare a module or re-open another's declarations are parsed (fast tier).
    if (!text.includes('defineModule(') && !text.includes('declare module')) continue;
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (n: ts.Node) => {
      if (ts.isCallExpression(n) && n.expression.getText(sf) === 'defineModule' && n.arguments[0] && ts.isObjectLiteralExpression(n.arguments[0])) {
        const prop = (name: string) => n.arguments[0] && (n.arguments[0] as ts.ObjectLiteralExpression).properties.find((p) => ts.isPropertyAssignment(p) && p.name.getText(sf) === name) as ts.PropertyAssignment | undefined;
        const name = prop('name')?.initializer;
        const needs = prop('needs')?.initializer;
        if (name && ts.isStringLiteral(name)) {
          const list = needs && ts.isArrayLiteralExpression(needs) ? needs.elements.filter(ts.isStringLiteral).map((e) => e.text) : [];
          found.modules.set(name.text, { file, needs: list });
        }
      }
      if (ts.isModuleDeclaration(n) && ts.isStringLiteral(n.name) && n.name.text.startsWith('.')) {
        const target = resolve(dirname(file), n.name.text).replace(/\.js$/, '.ts');
        if (target.endsWith(join('platform', 'lib', 'modules.ts'))) {
          n.body?.forEachChild((d) => {
            if (!ts.isInterfaceDeclaration(d) || d.name.text !== 'Provides') return;
            for (const m of d.members) if (ts.isPropertySignature(m) && m.type) found.provides.set(m.name.getText(sf), { file, type: m.type, source: sf });
          });
        } else found.merges.push({ file, target });
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return found;
}

/** The files a type's names come from: the imports of its file, and `Provides['x']` as the file that provides x. */
function typeSources(found: Found, file: string, type: ts.TypeNode, sf: ts.SourceFile): { name: string; from: string }[] {
  const imports = new Map<string, string>();
  for (const st of sf.statements) {
    if (!ts.isImportDeclaration(st) || !ts.isStringLiteral(st.moduleSpecifier) || !st.moduleSpecifier.text.startsWith('.')) continue;
    const from = resolve(dirname(file), st.moduleSpecifier.text).replace(/\.js$/, '.ts');
    const b = st.importClause?.namedBindings;
    if (b && ts.isNamedImports(b)) for (const el of b.elements) imports.set(el.name.text, from);
    if (st.importClause?.name) imports.set(st.importClause.name.text, from);
  }
  const out: { name: string; from: string }[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isIndexedAccessTypeNode(n) && n.objectType.getText(sf) === 'Provides' && ts.isLiteralTypeNode(n.indexType) && ts.isStringLiteral(n.indexType.literal)) {
      const key = n.indexType.literal.text;
      const p = found.provides.get(key);
      if (p) out.push({ name: `Provides['${key}']`, from: p.file });
    }
    if (ts.isTypeReferenceNode(n)) {
      const first = n.typeName.getText(sf).split('.')[0];
      const from = imports.get(first);
      if (from) out.push({ name: first, from });
    }
    ts.forEachChild(n, visit);
  };
  visit(type);
  return out;
}

/** Why the core depends on a feature, one line each; none when it does not. */
export function coreOnFeatures(root: string, files: Map<string, string>): string[] {
  const found = scan(files);
  const rel = (f: string) => relative(root, f);
  const isFeature = (f: string) => layerOf(root, f) === 'features';
  const out: string[] = [];
  for (const [name, m] of found.modules) {
    if (layerOf(root, m.file) !== 'core') continue;
    for (const need of m.needs) {
      const by = found.modules.get(need);
      if (by && isFeature(by.file)) out.push(`core module ${name} (${rel(m.file)}) needs the feature module ${need} (${rel(by.file)})`);
    }
  }
  for (const [key, p] of found.provides) {
    if (layerOf(root, p.file) !== 'core') continue;
    // A core interface named in the Provides entry, or reached from it in its own file, is read too.
    const local = new Map<string, ts.InterfaceDeclaration | ts.TypeAliasDeclaration>();
    for (const st of p.source.statements) if (ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) local.set(st.name.text, st);
    const seen = new Set<ts.Node>();
    const walk = (n: ts.Node) => {
      if (seen.has(n)) return;
      seen.add(n);
      for (const s of typeSources(found, p.file, n as ts.TypeNode, p.source)) if (isFeature(s.from)) out.push(`core provides ${key} (${rel(p.file)}): its type mentions ${s.name} of ${rel(s.from)}`);
      const refs = (c: ts.Node): void => {
        if (ts.isTypeReferenceNode(c)) {
          const d = local.get(c.typeName.getText(p.source));
          if (d) walk(d);
        }
        c.forEachChild(refs);
      };
      refs(n);
    };
    walk(p.type);
  }
  for (const m of found.merges) if (isFeature(m.file) && layerOf(root, m.target) === 'core') out.push(`${rel(m.file)} re-opens ${rel(m.target)} of the core (declaration merging)`);
  return out.sort();
}

const tree = () => new Map(tsFiles(src).map((f) => [f, readFileSync(f, 'utf8')]));

t.test('no core module needs a feature, nor provides a type that mentions one', async (t) => {
  const files = tree();
  const found = scan(files);
  t.ok(found.modules.size >= 40, `modules read (${found.modules.size})`);
  t.same(coreOnFeatures(src, files), [], 'the core depends on these features (contribute to the run hooks instead)');
});

t.test('the check finds a core need on a feature, a feature type in a core Provides, and a feature merging into the core', async (t) => {
  const r = '/x/src';
  const planted = new Map([
    [
      `${r}/platform/lib/modules.ts`,
      'export interface Provides {}\nexport function defineModule(m: unknown) { return m; }',
    ],
    [
      `${r}/features/usage/module.ts`,
      `import { defineModule } from '../../platform/lib/modules.js';
       export interface UsageModule { runUsage(id: string): number }
       declare module '../../platform/lib/modules.js' { interface Provides { usage: UsageModule } }
       declare module '../../core/engine/module.js' { interface Engine { usage: UsageModule } }
       export const usageModule = defineModule({ name: 'usage', needs: [] });`,
    ],
    [
      `${r}/core/engine/module.ts`,
      `import { defineModule, type Provides } from '../../platform/lib/modules.js';
       import type { Budgets } from '../../features/usage/budgets.js';
       export interface Engine { spent: Budgets; inner: Inner }
       interface Inner { usage: Provides['usage'] }
       declare module '../../platform/lib/modules.js' { interface Provides { engine: Engine } }
       export const engineModule = defineModule({ name: 'engine', needs: ['usage'] });`,
    ],
  ]);
  t.same(coreOnFeatures(r, planted), [
    'core module engine (core/engine/module.ts) needs the feature module usage (features/usage/module.ts)',
    "core provides engine (core/engine/module.ts): its type mentions Budgets of features/usage/budgets.ts",
    "core provides engine (core/engine/module.ts): its type mentions Provides['usage'] of features/usage/module.ts",
    'features/usage/module.ts re-opens core/engine/module.ts of the core (declaration merging)',
  ]);
});
