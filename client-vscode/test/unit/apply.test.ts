import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { pickApplyAction } from '../../src/answers';
import { applyResult } from '../../src/apply';
import { FakeClient, mock, services } from './fakes';

beforeEach(() => mock.reset());

const KIND = 'refactor.rewrite.kernelevo.apply';
const ref = { uri: 'file:///w/softmax.py', targetId: 'function:softmax', label: 'softmax' };
const edit = { changes: { [ref.uri]: [{ range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } }, newText: 'new\n' }] } };

test('the apply action is matched on target and run, whichever way the server names them', () => {
  const a = { title: 'Apply 1.4x (run r1)', kind: KIND, data: { targetId: 'function:softmax', runId: 'r1' } };
  const b = { title: 'Apply 1.2x (run r2)', kind: KIND, data: { target_id: 'function:softmax', run_id: 'r2' } };
  const c = { title: 'Apply other', kind: KIND, command: { title: 'x', command: 'kernelevo.apply', arguments: ['u', 'function:other', 'r3'] } };
  const optimize = { title: 'Optimize', kind: 'source.kernelevo.optimize', data: { targetId: 'function:softmax' } };
  assert.equal(pickApplyAction([optimize, a, b, c], { ...ref, runId: 'r2' }), b);
  assert.equal(pickApplyAction([optimize, a, b, c], ref), a);
  assert.equal(pickApplyAction([c], { ...ref, targetId: 'function:other' }), c);
  assert.equal(pickApplyAction([a, b], { ...ref, runId: 'r9' }), undefined, 'never applies a different run than asked');
  const anonymous = { title: 'Apply', kind: KIND };
  assert.equal(pickApplyAction([anonymous], ref), anonymous);
  assert.equal(pickApplyAction([anonymous, { ...anonymous }], ref), undefined);
  assert.equal(pickApplyAction(null, ref), undefined);
});

test("Apply asks the server for its code action, resolves the edit lazily and applies it as a refactoring", async () => {
  mock.documents.set(ref.uri, 'old\nline two\n');
  const client = new FakeClient();
  client.handlers['textDocument/codeAction'] = () => [{ title: 'Apply', kind: KIND, data: { targetId: ref.targetId, runId: 'r1' } }];
  client.handlers['codeAction/resolve'] = (action) => ({ ...action, edit });
  const { s } = services(client);
  const applied: unknown[] = [];
  const ok = await applyResult({ client: () => client, toWorkspaceEdit: async (e) => ({ converted: e }) as any, errors: s.errors, log: () => undefined, applied: (r) => applied.push(r) }, { ...ref, runId: 'r1' });
  assert.equal(ok, true);
  const [request] = client.sent('textDocument/codeAction');
  assert.deepEqual(request.params.context.only, [KIND]);
  assert.deepEqual(request.params.range, { start: { line: 0, character: 0 }, end: { line: 2, character: 0 } });
  assert.equal(client.sent('codeAction/resolve').length, 1);
  assert.deepEqual(mock.appliedEdits, [{ edit: { converted: edit }, metadata: { isRefactoring: true } }]);
  assert.deepEqual(applied, [{ ...ref, runId: 'r1' }]);
  assert.match(mock.messages.at(-1)!.message, /applied the result for softmax/);
});

test('a declined edit (refactor preview cancelled) is not reported as applied', async () => {
  mock.documents.set(ref.uri, 'old\n');
  mock.applyEditResult = false;
  const client = new FakeClient();
  client.handlers['textDocument/codeAction'] = () => [{ title: 'Apply', kind: KIND, data: { targetId: ref.targetId }, edit }];
  const { s } = services(client);
  const ok = await applyResult({ client: () => client, toWorkspaceEdit: async (e) => e as any, errors: s.errors, log: () => undefined }, ref);
  assert.equal(ok, false);
  assert.equal(client.sent('codeAction/resolve').length, 0);
  assert.match(mock.messages.at(-1)!.message, /was not applied/);
});

test('without a matching code action, the server command kernelevo.apply does it (same server-side checks)', async () => {
  mock.documents.set(ref.uri, 'old\n');
  const client = new FakeClient();
  client.handlers['textDocument/codeAction'] = () => [];
  client.handlers['workspace/executeCommand'] = () => null;
  const { s } = services(client);
  assert.equal(await applyResult({ client: () => client, toWorkspaceEdit: async (e) => e as any, errors: s.errors, log: () => undefined }, { ...ref, runId: 'r5' }), true);
  assert.deepEqual(client.sent('workspace/executeCommand')[0].params, { command: 'kernelevo.apply', arguments: [ref.uri, ref.targetId, 'r5'] });
  assert.equal(mock.appliedEdits.length, 0);
});

test("the server's refusal (target changed) reaches the user", async () => {
  mock.documents.set(ref.uri, 'old\n');
  const client = new FakeClient();
  client.handlers['textDocument/codeAction'] = () => [{ title: 'Apply', kind: KIND, data: { targetId: ref.targetId } }];
  client.handlers['codeAction/resolve'] = () => Promise.reject(new Error('softmax changed since the search; run it again'));
  const { s, shownErrors } = services(client);
  assert.equal(await applyResult({ client: () => client, toWorkspaceEdit: async (e) => e as any, errors: s.errors, log: () => undefined }, ref), false);
  assert.match(shownErrors[0], /could not apply the result for softmax: softmax changed/);
});

test("code actions are asked for at the target's lens (the server answers for the target at the range start)", async () => {
  const client = new FakeClient();
  client.handlers['textDocument/codeLens'] = () => [
    { range: { start: { line: 2, character: 0 }, end: { line: 2, character: 0 } }, command: { title: 'Optimize', command: 'kernelevo.optimize', arguments: [ref.uri, 'function:other', 'auto'] } },
    { range: { start: { line: 9, character: 0 }, end: { line: 9, character: 0 } }, command: { title: 'Optimize', command: 'kernelevo.optimize', arguments: [ref.uri, ref.targetId, 'auto'] } },
  ];
  client.handlers['textDocument/codeAction'] = () => [
    { title: 'Apply', kind: KIND, data: { targetId: ref.targetId }, disabled: { reason: 'softmax changed since the search started' } },
  ];
  const { s, shownErrors } = services(client);
  assert.equal(await applyResult({ client: () => client, toWorkspaceEdit: async (e) => e as any, errors: s.errors, log: () => undefined }, ref), false);
  assert.deepEqual(client.sent('textDocument/codeAction')[0].params.range, { start: { line: 9, character: 0 }, end: { line: 9, character: 0 } });
  assert.deepEqual(shownErrors, ["KernelEvo can't apply the result for softmax: softmax changed since the search started"]);
  assert.equal(mock.appliedEdits.length, 0);
});

test('the server command reporting "not applied" is not counted as applied', async () => {
  mock.documents.set(ref.uri, 'old\n');
  const client = new FakeClient();
  client.handlers['textDocument/codeAction'] = () => null;
  client.handlers['workspace/executeCommand'] = () => ({ applied: false, runId: 'r1' });
  const { s } = services(client);
  assert.equal(await applyResult({ client: () => client, toWorkspaceEdit: async (e) => e as any, errors: s.errors, log: () => undefined }, ref), false);
});
