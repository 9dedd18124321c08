// ts-node's transpiler hook backed by esbuild, for tap (the `ts-node` section of tsconfig.json
// names it). tap 21 loads test files through ts-node, whose default transpiler (TypeScript's
// transpileModule, with no cache) spent about 6 s of CPU per test file compiling the service's
// sources again; esbuild does the same type-stripping in a fraction of that. ts-node has no esbuild
// transpiler of its own (only swc, a native package we do not otherwise need), hence these lines.
// Not tsx (`--import=tsx`, 16% faster on the fast tier): its esbuild options keep function names
// (`keepNames`, fixed), which wraps functions in a `__name(...)` call, and a function handed to
// playwright's page.evaluate then fails in the page with `__name is not defined`.
const esbuild = require('esbuild');

exports.create = () => ({
  transpile(input, { fileName }) {
    const cjs = /\.c[jt]s$/.test(fileName);
    const out = esbuild.transformSync(input, {
      loader: /\.[cm]?tsx$/.test(fileName) ? 'tsx' : /\.[cm]?ts$/.test(fileName) ? 'ts' : 'js',
      format: cjs ? 'cjs' : 'esm',
      target: 'node20',
      sourcemap: 'external',
      sourcefile: fileName,
      jsx: 'automatic',
    });
    return { outputText: out.code, sourceMapText: out.map };
  },
});
