import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { CommandIds, registerCommands } from '../../src/commands';
import { proposalUri } from '../../src/diff';
import { localJobs } from '../../src/optimize';
import { fakeEditor, Uri } from '../mock/vscode';
import { FakeClient, mock, services } from './fakes';
import manifest from '../../package.json';

beforeEach(() => mock.reset());

const FILE = 'file:///w/softmax.py';
const TEXT = 'import torch\n\ndef softmax(x):\n    return torch.softmax(x, -1)\n';

function serverWithTarget() {
  const client = new FakeClient();
  client.handlers['textDocument/codeLens'] = () => [
    { range: { start: { line: 2, character: 0 }, end: { line: 3, character: 31 } }, command: { title: 'Optimize', command: 'kernelevo.optimize', arguments: [FILE, 'function:softmax', 'auto'] } },
  ];
  client.handlers['textDocument/codeAction'] = () => [];
  client.handlers['kernelevo/jobs'] = () => [];
  return client;
}

test('every contributed command has a handler, and every handler is contributed', () => {
  const { s } = services(serverWithTarget());
  registerCommands(s);
  const contributed = manifest.contributes.commands.map((c) => c.command).sort();
  assert.deepEqual([...mock.registered.keys()].sort(), contributed);
  assert.deepEqual(Object.values(CommandIds).sort(), contributed);
  for (const id of ['kernelevo.optimizeAtCursor', 'kernelevo.showResultDiff', 'kernelevo.applyResult', 'kernelevo.cancelJob', 'kernelevo.showJobs', 'kernelevo.openReport', 'kernelevo.setApiKey']) {
    assert.ok(contributed.includes(id), id);
  }
  const menuCommands = Object.values(manifest.contributes.menus).flat().map((m) => m.command);
  for (const id of menuCommands) {
    assert.ok(contributed.includes(id), `menu entry ${id} names a contributed command`);
  }
});

test('Optimize kernel at cursor finds the target through the server and starts a search', async () => {
  const client = serverWithTarget();
  client.handlers['kernelevo/optimize'] = () => ({ jobId: 'j', runId: 'r', status: 'no_improvement', bestSpeedup: 0.9, bestSpeedupCompile: null, tokens: 0, costUsd: 0 });
  const { s } = services(client);
  await s.keys.set('anthropic', 'sk-ant-0123456789');
  registerCommands(s);
  fakeEditor(FILE, TEXT, 3, 8);
  await mock.registered.get(CommandIds.optimizeAtCursor)!();
  const [optimize] = client.sent('kernelevo/optimize');
  assert.equal(optimize.params.targetId, 'function:softmax');
  assert.equal(optimize.params.uri, FILE);
  assert.equal(mock.progress.length, 1);
});

test('with the cursor outside any target, the user learns what KernelEvo can optimize', async () => {
  const { s } = services(serverWithTarget());
  registerCommands(s);
  fakeEditor(FILE, TEXT, 0, 0);
  await mock.registered.get(CommandIds.optimizeAtCursor)!();
  assert.match(mock.messages.at(-1)!.message, /No optimization target at the cursor/);
});

test('nested targets: the user picks, innermost first', async () => {
  const client = serverWithTarget();
  const outer = { range: { start: { line: 0, character: 0 }, end: { line: 3, character: 31 } }, command: { title: 'Optimize', command: 'kernelevo.optimize', arguments: [FILE, 'module:Outer', 'auto'] } };
  const inner = (client.handlers['textDocument/codeLens'] as () => any[])();
  client.handlers['textDocument/codeLens'] = () => [outer, ...inner];
  client.handlers['kernelevo/proposal'] = () => Promise.reject(new Error('no result yet'));
  const { s } = services(client);
  registerCommands(s);
  fakeEditor(FILE, TEXT, 3, 8);
  let offered: string[] = [];
  mock.quickPick = (items) => ((offered = items.map((i: any) => i.label)), items[1]);
  await mock.registered.get(CommandIds.showResultDiff)!();
  assert.deepEqual(offered, ['softmax', 'Outer']);
  assert.equal(client.sent('kernelevo/proposal')[0].params.targetId, 'module:Outer');
});

test('Apply from the diff tab uses the run shown there', async () => {
  const client = serverWithTarget();
  client.handlers['workspace/executeCommand'] = () => null;
  mock.documents.set(FILE, TEXT);
  const { s } = services(client);
  registerCommands(s);
  const tab = proposalUri({ file: FILE, targetId: 'function:softmax', runId: 'r42' });
  await mock.registered.get(CommandIds.applyResult)!(tab);
  assert.deepEqual(client.sent('workspace/executeCommand')[0].params.arguments, [FILE, 'function:softmax', 'r42']);
});

test('Set API key: stored in SecretStorage, never in settings, then the server restarts to see it', async () => {
  const { s, secrets, restarts } = services(serverWithTarget());
  registerCommands(s);
  mock.quickPick = (items) => items.find((i: any) => i.label === 'openai');
  let prompt: any;
  mock.inputBox = (options) => ((prompt = options), 'sk-openai-0123456789');
  await mock.registered.get(CommandIds.setApiKey)!();
  assert.equal(prompt.password, true);
  assert.equal(prompt.validateInput('has space'), 'An API key has no spaces or line breaks.');
  assert.equal(secrets.data.get('kernelevo.apiKey.openai'), 'sk-openai-0123456789');
  assert.deepEqual(mock.configUpdates, []);
  assert.equal(restarts(), 1);
  assert.ok(!JSON.stringify(mock.messages).includes('sk-openai-0123456789'));
});

test('Set API key while jobs run asks before restarting', async () => {
  const { s, restarts } = services(serverWithTarget());
  registerCommands(s);
  s.board.start('t', FILE, 'function:softmax');
  mock.inputBox = () => 'sk-ant-0123456789';
  mock.answer = () => 'Later';
  await mock.registered.get(CommandIds.setApiKey)!('anthropic');
  assert.match(mock.messages.at(-1)!.message, /stops 1 running job/);
  assert.equal(restarts(), 0);
});

test('Cancel job uses kernelevo/cancel with the job id from kernelevo/jobs', async () => {
  const client = serverWithTarget();
  client.handlers['kernelevo/jobs'] = () => [
    { jobId: 'j1', uri: FILE, targetId: 'function:softmax', runId: 'r1', state: 'running', iteration: 2, bestSpeedup: 1.1, tokens: 10, costUsd: 0, startedAt: 0 },
  ];
  client.handlers['kernelevo/cancel'] = () => ({ cancelled: true });
  const { s } = services(client);
  registerCommands(s);
  assert.equal(await mock.registered.get(CommandIds.cancelJob)!(), true);
  assert.deepEqual(client.sent('kernelevo/cancel')[0].params, { jobId: 'j1' });
});

test('Cancel job falls back to cancelling the request of a job started here', async () => {
  const client = serverWithTarget();
  const { s } = services(client);
  registerCommands(s);
  s.board.start('tok-9', FILE, 'function:softmax');
  let cancelled = false;
  localJobs.set('tok-9', { cancel: () => (cancelled = true), token: {}, dispose() {} } as any);
  assert.equal(await mock.registered.get(CommandIds.cancelJob)!(), true);
  assert.equal(cancelled, true);
  localJobs.delete('tok-9');
});

test('Show jobs lists jobs and acts on the chosen one; Open report renders Markdown', async () => {
  const client = serverWithTarget();
  client.handlers['kernelevo/jobs'] = () => [
    { jobId: 'j1', uri: FILE, targetId: 'function:softmax', runId: 'r1', state: 'improved', iteration: 5, bestSpeedup: 1.42, tokens: 12000, costUsd: 0.12, startedAt: 0 },
  ];
  const { s } = services(client);
  registerCommands(s);
  const picks: any[] = [];
  mock.quickPick = (items) => (picks.push(items), typeof items[0] === 'string' ? 'Open Report' : items[0]);
  await mock.registered.get(CommandIds.showJobs)!();
  assert.equal(picks[0][0].label, 'softmax');
  assert.match(picks[0][0].description, /improved · iteration 5 · best 1\.42x/);
  assert.deepEqual(picks[1], ['Show Diff', 'Apply', 'Open Report']);
  const preview = mock.executed.find((e) => e.command === 'markdown.showPreview')!;
  const uri = preview.args[0] as Uri;
  const text = s.reports.provideTextDocumentContent(uri as any);
  assert.match(text, /# KernelEvo report: softmax/);
  assert.match(text, /\| Best speedup \(vs eager\) \| 1\.42x \|/);
  assert.match(text, /\| Run \| `r1` \|/);
});

test('commands that need the server explain what is wrong when it is not running', async () => {
  const { s, shownErrors } = services(undefined);
  registerCommands(s);
  fakeEditor(FILE, TEXT, 3, 0);
  await mock.registered.get(CommandIds.showResultDiff)!();
  assert.deepEqual(shownErrors, ['not running']);
});
