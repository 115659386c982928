import assert from 'node:assert/strict';
import { test } from 'node:test';
import manifest from '../../package.json';
import { DEFAULTS } from '../../src/settings';

const properties = manifest.contributes.configuration.properties as Record<string, { default: unknown; type: string }>;

test('every setting the client reads is contributed with the same default', () => {
  for (const [key, value] of Object.entries(DEFAULTS)) {
    const contributed = properties[`kernelevo.${key}`];
    assert.ok(contributed, `kernelevo.${key} is contributed`);
    assert.deepEqual(contributed.default, value, `default of kernelevo.${key}`);
  }
  for (const name of ['provider', 'model', 'budgetTokens', 'budgetUsd', 'backend', 'gpu', 'interpreter', 'storePath', 'diagnostics']) {
    assert.ok(properties[`kernelevo.${name}`], name);
  }
});

test('no setting holds an API key', () => {
  for (const key of Object.keys(properties)) {
    assert.doesNotMatch(key, /key|secret|password|credential/i);
  }
});

test('workspace trust: limited support; the interpreter and store path are not taken from untrusted folders', () => {
  const trust = manifest.capabilities.untrustedWorkspaces;
  assert.equal(trust.supported, 'limited');
  assert.deepEqual(trust.restrictedConfigurations.sort(), ['kernelevo.interpreter', 'kernelevo.storePath']);
});

test('the extension activates on Python and CUDA files and is bundled to dist/', () => {
  assert.ok(manifest.activationEvents.includes('onLanguage:python'));
  assert.equal(manifest.main, './dist/extension.js');
  assert.deepEqual(Object.keys(manifest.dependencies), ['vscode-languageclient']);
});

test('the interpreter setting is read from User settings in a remote window too (not machine-scoped)', () => {
  // VS Code Remote and code-server ignore `machine`/`machine-overridable` settings in User settings.
  const scope = (properties['kernelevo.interpreter'] as { scope?: string }).scope;
  assert.equal(scope, 'resource');
});
