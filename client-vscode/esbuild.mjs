// Bundles the extension (dist/extension.js) or, with --tests, the tests (out/test/**).
// Unit tests get `vscode` aliased to test/mock/vscode.ts; the e2e test needs no vscode at all.
import * as esbuild from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const args = new Set(process.argv.slice(2));
const production = args.has('--production');

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  logLevel: 'warning',
};

function testsIn(dir) {
  return readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => join(dir, f));
}

if (args.has('--tests')) {
  await esbuild.build({
    ...common,
    entryPoints: testsIn('test/unit'),
    outdir: 'out/test/unit',
    alias: { vscode: './test/mock/vscode.ts', 'vscode-languageclient/node': './test/mock/languageclient.ts' },
    sourcemap: 'inline',
  });
  await esbuild.build({
    ...common,
    entryPoints: testsIn('test/e2e'),
    outdir: 'out/test/e2e',
    sourcemap: 'inline',
  });
} else {
  rmSync('dist', { recursive: true, force: true });
  await esbuild.build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    external: ['vscode'],
    minify: production,
    sourcemap: !production,
    // Keep class names readable in stack traces sent to the log.
    keepNames: true,
  });
}
