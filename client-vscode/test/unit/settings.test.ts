import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULTS, expandPath, needsRestart, readSettings, serverSettings } from '../../src/settings';

const reader = (values: Record<string, unknown>) => ({ get: <T>(key: string) => values[key] as T | undefined });

test('missing settings fall back to the defaults', () => {
  assert.deepEqual(readSettings(reader({})), DEFAULTS);
});

test('bad values are replaced, not passed on', () => {
  const s = readSettings(reader({ backend: 'opencl', budgetTokens: -5, budgetUsd: 'lots', gpu: 1.7, maxJobsPerGpu: 0, provider: '  ', diagnostics: 'yes' }));
  assert.equal(s.backend, 'auto');
  assert.equal(s.budgetTokens, DEFAULTS.budgetTokens);
  assert.equal(s.budgetUsd, DEFAULTS.budgetUsd);
  assert.equal(s.gpu, 1);
  assert.equal(s.maxJobsPerGpu, 1);
  assert.equal(s.provider, DEFAULTS.provider);
  assert.equal(s.diagnostics, true);
});

test('server settings: zero budgets mean no limit, empty model is null, interpreter stays on the client', () => {
  const s = readSettings(reader({ provider: 'offline', budgetTokens: 0, budgetUsd: 0, backend: 'triton', gpu: 2, diagnostics: false, storePath: '${workspaceFolder}/runs/store.sqlite', interpreter: '/opt/py/bin/python' }));
  const out = serverSettings(s, '/ws', '/home/me');
  assert.deepEqual(out, {
    provider: 'offline',
    model: null,
    budgetTokens: null,
    budgetUsd: null,
    backend: 'triton',
    gpu: 2,
    storePath: '/ws/runs/store.sqlite',
    diagnostics: false,
    maxJobsPerGpu: 1,
  });
  assert.ok(!('interpreter' in out));
  assert.ok(!Object.keys(out).some((k) => /key|secret|token$/i.test(k) && k !== 'budgetTokens'));
});

test('paths: ${workspaceFolder}, ${userHome}, ~ and workspace-relative paths expand; bare commands do not', () => {
  assert.equal(expandPath('~/venv/bin/python', '/ws', '/home/me'), '/home/me/venv/bin/python');
  assert.equal(expandPath('${userHome}/x', '/ws', '/home/me'), '/home/me/x');
  assert.equal(expandPath('${workspaceFolder}/.venv/bin/python', '/ws', '/home/me'), '/ws/.venv/bin/python');
  assert.equal(expandPath('.venv/bin/python', '/ws/', '/home/me'), '/ws/.venv/bin/python');
  assert.equal(expandPath('./.venv/bin/python', '/ws', '/home/me'), '/ws/.venv/bin/python');
  assert.equal(expandPath('python3.11', '/ws', '/home/me'), 'python3.11');
  assert.equal(expandPath('/usr/bin/python3', '/ws', '/home/me'), '/usr/bin/python3');
  assert.equal(expandPath('C:\\Python311\\python.exe', '/ws', '/home/me'), 'C:\\Python311\\python.exe');
  assert.equal(expandPath('', '/ws', '/home/me'), '');
});

test('only the interpreter needs a restart; other settings are pushed live', () => {
  assert.equal(needsRestart((k) => k === 'kernelevo.interpreter'), true);
  assert.equal(needsRestart((k) => k === 'kernelevo.budgetUsd'), false);
});
