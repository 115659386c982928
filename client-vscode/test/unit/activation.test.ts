/**
 * activate() end to end inside the mocked editor: interpreter discovery and the install
 * offer, how the language client is built (command, environment, settings, middleware),
 * and how configuration, trust and server messages are handled.
 */
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, beforeEach, test } from 'node:test';
import { activate } from '../../src/extension';
import { control, LanguageClient } from '../mock/languageclient';
import { changeConfiguration, grantTrust, mock, Uri, workspace } from '../mock/vscode';
import { memorySecrets } from './fakes';
import manifest from '../../package.json';

const dir = mkdtempSync(join(tmpdir(), 'kevo-activate-'));
mkdirSync(join(dir, 'ws'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A "python" that answers the extension's install check with `reply`. */
function fakePython(name: string, reply: object): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\necho '${JSON.stringify(reply)}'\n`);
  chmodSync(path, 0o755);
  return path;
}

const INSTALLED = fakePython('python-ok', { python: '/x', version: '3.11.7', kernelevo: '0.1.0', server: true, pygls: true });
const MISSING = fakePython('python-missing', { python: '/x', version: '3.11.7', error: "ModuleNotFoundError: No module named 'kernelevo'" });

function context() {
  return { subscriptions: [] as { dispose(): unknown }[], secrets: memorySecrets(), extensionPath: dir, globalStorageUri: Uri.file(dir) };
}

const contexts: ReturnType<typeof context>[] = [];

async function activated(config: Record<string, unknown>, prepare?: (ctx: ReturnType<typeof context>) => Promise<void>) {
  mock.config = { ...config };
  const ctx = context();
  contexts.push(ctx);
  await prepare?.(ctx);
  await activate(ctx as any);
  return ctx;
}

const client = (): LanguageClient => control.instances.at(-1)!;

afterEach(() => {
  for (const ctx of contexts.splice(0)) {
    ctx.subscriptions.forEach((d) => d.dispose());
  }
});

beforeEach(() => {
  mock.reset();
  control.reset();
  workspace.workspaceFolders = [{ uri: Uri.file(join(dir, 'ws')), name: 'ws', index: 0 }];
});

test('the server starts with the chosen Python, the stored API keys in its environment, and our settings', async () => {
  await activated({ 'kernelevo.interpreter': INSTALLED, 'kernelevo.provider': 'openai', 'kernelevo.budgetUsd': 0 }, async (ctx) => {
    await ctx.secrets.store('kernelevo.apiKey.openai', 'sk-openai-test-0123456789');
  });
  const c = client();
  assert.equal(c.serverOptions.command, INSTALLED);
  assert.equal(c.serverOptions.args[0], '-c');
  assert.equal(c.serverOptions.options.cwd, join(dir, 'ws'));
  assert.equal(c.serverOptions.options.env.OPENAI_API_KEY, 'sk-openai-test-0123456789');
  assert.equal(c.serverOptions.options.env.PYTHONSAFEPATH, '1');
  assert.equal(c.clientOptions.initializationOptions.provider, 'openai');
  assert.equal(c.clientOptions.initializationOptions.budgetUsd, null);
  assert.ok(!JSON.stringify(c.clientOptions.initializationOptions).includes('sk-openai'), 'keys never travel as settings');
  assert.deepEqual(c.clientOptions.documentSelector.map((s: any) => s.language), ['python', 'cuda-cpp']);
  assert.ok(c.clientOptions.markdown.isTrusted.enabledCommands.includes('kernelevo.showDiff'), 'hover command links work');
  assert.equal(c.state, 2);
  for (const command of manifest.contributes.commands.map((x) => x.command)) {
    assert.ok(mock.registered.has(command), command);
  }
  assert.equal(mock.statusItems[0].text, '$(beaker) KernelEvo');
  assert.equal(mock.statusItems[0].command, 'kernelevo.showJobs');
});

test('server commands from lenses and hovers: showDiff opens our diff view, others go to the server', async () => {
  await activated({ 'kernelevo.interpreter': INSTALLED });
  const c = client();
  control.respond = (method) => (method === 'kernelevo/proposal' ? Promise.reject(new Error('no result yet')) : null);
  const next: unknown[] = [];
  await c.clientOptions.middleware.executeCommand('kernelevo.showDiff', ['file:///w/a.py', 'function:f', 'r1'], (...a: unknown[]) => next.push(a));
  assert.deepEqual(c.requests.at(-1), { method: 'kernelevo/proposal', params: { uri: 'file:///w/a.py', targetId: 'function:f', runId: 'r1' } });
  await c.clientOptions.middleware.executeCommand('kernelevo.cancel', ['7'], (...a: unknown[]) => next.push(a));
  assert.deepEqual(next, [['kernelevo.cancel', ['7']]]);
});

test('commands the server does not advertise are handled by the client itself', async () => {
  control.advertised = ['kernelevo.optimize'];
  await activated({ 'kernelevo.interpreter': INSTALLED });
  assert.ok(mock.registered.has('kernelevo.showDiff'));
  assert.ok(mock.registered.has('kernelevo.apply'));
  assert.ok(!mock.registered.has('kernelevo.optimize'), 'the language client registers advertised ones');
});

test('workspace/configuration pulls get our converted settings; changes are pushed, interpreter changes restart', async () => {
  await activated({ 'kernelevo.interpreter': INSTALLED, 'kernelevo.gpu': 3 });
  const c = client();
  const answers = await c.clientOptions.middleware.workspace.configuration(
    { items: [{ section: 'kernelevo' }, { section: 'python' }, { section: 'kernelevo.gpu' }] },
    undefined,
    async () => [{ interpreter: 'raw' }, { pythonPath: 'x' }, 3],
  );
  assert.equal(answers[0].gpu, 3);
  assert.ok(!('interpreter' in answers[0]));
  assert.deepEqual(answers[1], { pythonPath: 'x' });
  assert.equal(answers[2], 3);

  mock.config['kernelevo.gpu'] = 1;
  changeConfiguration('kernelevo.gpu');
  await mock.settle();
  assert.deepEqual(c.notifications.at(-1)!.method, 'workspace/didChangeConfiguration');
  assert.equal(c.notifications.at(-1)!.params.settings.kernelevo.gpu, 1);
  assert.equal(control.instances.length, 1);

  changeConfiguration('kernelevo.interpreter');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(control.instances.length, 2, 'a new client for the new interpreter');
  assert.equal(c.state, 1, 'the old one stopped');
});

test("server messages go through the same once-only reporter", async () => {
  await activated({ 'kernelevo.interpreter': INSTALLED });
  const show = client().handlers.get('window/showMessage')!;
  show({ type: 1, message: 'KernelEvo: optimizing Model failed: boom' });
  show({ type: 1, message: 'KernelEvo: optimizing Model failed: boom' });
  show({ type: 4, message: 'just a log line' });
  const errors = mock.messages.filter((m) => m.level === 'error');
  assert.equal(errors.length, 1);
  assert.deepEqual(errors[0].items, ['Show Log']);
});

test('KernelEvo missing: no server, a warning with the exact install command, and the ways out', async () => {
  mock.answer = (m) => (m.items.includes('Copy Command') ? 'Copy Command' : undefined);
  await activated({ 'kernelevo.interpreter': MISSING });
  await mock.settle();
  assert.equal(control.instances.length, 0);
  const offer = mock.messages.find((m) => m.level === 'warning')!;
  assert.match(offer.message, /the kernelevo package is not importable/);
  assert.ok(offer.message.includes(`${MISSING} -m pip install kernelevo`), offer.message);
  assert.deepEqual(offer.items, ['Install in Terminal', 'Copy Command', 'Choose Interpreter']);
  assert.equal(mock.clipboard, `${MISSING} -m pip install kernelevo`);
  assert.equal(mock.statusItems[0].text, '$(warning) KernelEvo: not installed');
});

test('Install in Terminal types the shown command into a terminal', async () => {
  mock.answer = (m) => (m.items.includes('Install in Terminal') ? 'Install in Terminal' : undefined);
  await activated({ 'kernelevo.interpreter': MISSING });
  await mock.settle();
  assert.deepEqual(mock.terminals[0].sent, [`${MISSING} -m pip install kernelevo`]);
});

test("without the setting, the Python extension's environment is used; not in an untrusted workspace", async () => {
  let asked = 0;
  const api = {
    environments: {
      getActiveEnvironmentPath: () => ((asked += 1), { path: '/env' }),
      resolveEnvironment: async () => ({ executable: { uri: { fsPath: INSTALLED } } }),
    },
  };
  mock.extensions.set('ms-python.python', { isActive: true, exports: api, activate: async () => api });
  await activated({});
  assert.equal(client().serverOptions.command, INSTALLED);
  assert.equal(asked, 1);

  contexts.splice(0).forEach((ctx) => ctx.subscriptions.forEach((d) => d.dispose()));
  mock.reset();
  control.reset();
  mock.extensions.set('ms-python.python', { isActive: true, exports: api, activate: async () => api });
  workspace.isTrusted = false;
  // `python3` on PATH is our fake one.
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  copyFileSync(INSTALLED, join(bin, 'python3'));
  const path = process.env.PATH;
  process.env.PATH = `${bin}:${path}`;
  try {
    await activated({});
  } finally {
    process.env.PATH = path;
  }
  assert.equal(asked, 1, "an untrusted folder's environment is not run");
  assert.equal(client().serverOptions.command, 'python3');
  grantTrust();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(asked, 2, 'trusting the folder restarts with the full search');
  assert.equal(client().serverOptions.command, INSTALLED);
});

test('a server that fails to start is reported once, with Restart', async () => {
  control.failStart = 'spawn EACCES';
  await activated({ 'kernelevo.interpreter': INSTALLED });
  const error = mock.messages.find((m) => m.level === 'error')!;
  assert.match(error.message, /failed to start: spawn EACCES/);
  assert.deepEqual(error.items, ['Restart Server', 'Show Log']);
  assert.equal(mock.statusItems[0].text, '$(error) KernelEvo');
});

test("in an untrusted workspace an interpreter inside the workspace is not run", async () => {
  workspace.isTrusted = false;
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  copyFileSync(INSTALLED, join(bin, 'python3'));
  const path = process.env.PATH;
  process.env.PATH = `${bin}:${path}`;
  try {
    await activated({ 'kernelevo.interpreter': '${workspaceFolder}/.venv/bin/python' });
  } finally {
    process.env.PATH = path;
  }
  assert.equal(client().serverOptions.command, 'python3');
  assert.notEqual(client().serverOptions.options.cwd, join(dir, 'ws'));
});
