import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  CHECK_SCRIPT,
  checkInterpreter,
  findInterpreter,
  installCommand,
  isKernelEvoCheckout,
  parseCheckOutput,
  PythonExtensionApi,
  RunResult,
  serverCommand,
  shellQuote,
} from '../../src/python';

function pythonApi(active: string | undefined, executable: string | undefined): PythonExtensionApi {
  return {
    environments: {
      getActiveEnvironmentPath: () => (active ? { path: active } : undefined),
      resolveEnvironment: async () => (executable ? { executable: { uri: { fsPath: executable } } } : undefined),
    },
  };
}

test('the kernelevo.interpreter setting wins over the Python extension', async () => {
  let asked = false;
  const found = await findInterpreter({ setting: '/opt/py/bin/python', pythonExtension: async () => ((asked = true), pythonApi('/env', '/env/bin/python')) });
  assert.deepEqual(found, { path: '/opt/py/bin/python', source: 'setting' });
  assert.equal(asked, false);
});

test("without the setting, the Python extension's active environment is used", async () => {
  const found = await findInterpreter({ setting: '', pythonExtension: async () => pythonApi('/ws/.venv', '/ws/.venv/bin/python') });
  assert.deepEqual(found, { path: '/ws/.venv/bin/python', source: 'python-extension' });
});

test('python3 when there is no Python extension, it has no environment, or it fails', async () => {
  assert.deepEqual(await findInterpreter({ setting: '', platform: 'linux' }), { path: 'python3', source: 'default' });
  assert.deepEqual(await findInterpreter({ setting: '', platform: 'linux', pythonExtension: async () => pythonApi(undefined, undefined) }), {
    path: 'python3',
    source: 'default',
  });
  assert.deepEqual(await findInterpreter({ setting: '', platform: 'linux', pythonExtension: async () => pythonApi('/x', undefined) }), { path: 'python3', source: 'default' });
  assert.deepEqual(await findInterpreter({ setting: '', platform: 'linux', pythonExtension: async () => Promise.reject(new Error('boom')) }), {
    path: 'python3',
    source: 'default',
  });
  assert.equal((await findInterpreter({ setting: '', platform: 'win32' })).path, 'python');
});

test('check output: installed, missing, missing server, old Python, garbage', () => {
  assert.deepEqual(parseCheckOutput('{"python": "/p", "version": "3.11.7", "kernelevo": "0.1.0", "server": true, "pygls": true}\n'), {
    ok: true,
    version: '0.1.0',
    pythonVersion: '3.11.7',
  });
  const missing = parseCheckOutput('{"version": "3.12.1", "error": "ModuleNotFoundError: No module named \'kernelevo\'"}');
  assert.equal(missing.ok, false);
  assert.match(missing.reason!, /not importable\.$/);
  assert.match(parseCheckOutput('{"version": "3.11.1", "kernelevo": "0.1.0", "server": false, "pygls": true}').reason!, /without its language server/);
  assert.match(parseCheckOutput('{"version": "3.11.1", "kernelevo": "0.1.0", "server": true, "pygls": false}').reason!, /pygls/);
  assert.match(parseCheckOutput('{"version": "3.8.10"}').reason!, /3\.10 or newer/);
  assert.equal(parseCheckOutput('Traceback...').ok, false);
});

test('checkInterpreter reports an interpreter that does not exist, or that crashes', async () => {
  const calls: string[][] = [];
  const run = (result: RunResult) => async (command: string, args: string[]) => (calls.push([command, ...args]), result);
  const absent = await checkInterpreter('/nope/python', '/ws', run({ code: null, stdout: '', stderr: '', spawnError: 'ENOENT: spawn /nope/python ENOENT' }));
  assert.deepEqual(absent, { ok: false, reason: '/nope/python could not be started (ENOENT).' });
  assert.deepEqual(calls[0], ['/nope/python', '-c', CHECK_SCRIPT]);
  const crashed = await checkInterpreter('python3', '/ws', run({ code: 1, stdout: '', stderr: 'Fatal Python error: init_fs_encoding\n' }));
  assert.match(crashed.reason!, /Fatal Python error/);
});

test('the check and the server drop the working folder from sys.path', () => {
  for (const script of [CHECK_SCRIPT, serverCommand('python3').args[1]]) {
    assert.match(script, /del sys\.path\[0\]/);
  }
  assert.deepEqual(serverCommand('/p/python').args[0], '-c');
  assert.match(serverCommand('/p/python').args[1], /main\(\['serve', \*sys\.argv\[1:\]\]\)/);
  assert.match(CHECK_SCRIPT, /find_spec\("kernelevo_server"\)/);
});

test('the install command is exact: editable from a checkout, else from the package index; quoted paths', () => {
  assert.deepEqual(installCommand('/usr/bin/python3', undefined, 'linux'), {
    args: ['-m', 'pip', 'install', 'kernelevo'],
    display: '/usr/bin/python3 -m pip install kernelevo',
  });
  assert.equal(installCommand('/home/me/my envs/bin/python', '/src/kernel evo', 'linux').display, "'/home/me/my envs/bin/python' -m pip install -e '/src/kernel evo'");
  assert.equal(installCommand('C:\\Program Files\\Python\\python.exe', undefined, 'win32').display, '& "C:\\Program Files\\Python\\python.exe" -m pip install kernelevo');
  assert.equal(shellQuote("it's", 'linux'), `'it'\\''s'`);
});

test('a KernelEvo checkout is recognised by its pyproject', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kevo-'));
  try {
    assert.equal(isKernelEvoCheckout(dir), false);
    writeFileSync(join(dir, 'pyproject.toml'), '[project]\nname = "kernelevo"\nversion = "0.1.0"\n');
    assert.equal(isKernelEvoCheckout(dir), true);
    writeFileSync(join(dir, 'pyproject.toml'), '[project]\nname = "kernelevo-plugins"\n');
    assert.equal(isKernelEvoCheckout(dir), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
