import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { applyResult } from '../../src/apply';
import { FakeClient, mock, services } from './fakes';

beforeEach(() => mock.reset());

const ref = { uri: 'file:///w/softmax.py', targetId: 'function:softmax', label: 'softmax' };

test('Apply is one request: kernelevo.apply with the target and run, no lenses or code actions', async () => {
  const client = new FakeClient();
  client.handlers['workspace/executeCommand'] = () => ({ applied: true, runId: 'r1' });
  const { s } = services(client);
  const applied: unknown[] = [];
  const ok = await applyResult({ client: () => client, errors: s.errors, log: () => undefined, applied: (r) => applied.push(r) }, { ...ref, runId: 'r1' });
  assert.equal(ok, true);
  assert.deepEqual(
    client.requests.map((r) => r.method),
    ['workspace/executeCommand'],
  );
  assert.deepEqual(client.sent('workspace/executeCommand')[0].params, { command: 'kernelevo.apply', arguments: [ref.uri, ref.targetId, 'r1'] });
  assert.deepEqual(applied, [{ ...ref, runId: 'r1' }]);
  assert.equal(mock.appliedEdits.length, 0, 'the server sends the edit through workspace/applyEdit; the client applies nothing itself');
  assert.match(mock.messages.at(-1)!.message, /applied the result for softmax\. Undo \(Ctrl\+Z\) restores the original/);
});

test('without a run id the server picks the stored result; the answer names the run that was applied', async () => {
  const client = new FakeClient();
  client.handlers['workspace/executeCommand'] = () => ({ applied: true, runId: 'r7' });
  const { s } = services(client);
  const applied: any[] = [];
  assert.equal(await applyResult({ client: () => client, errors: s.errors, log: () => undefined, applied: (r) => applied.push(r) }, ref), true);
  assert.deepEqual(client.sent('workspace/executeCommand')[0].params.arguments, [ref.uri, ref.targetId, null]);
  assert.equal(applied[0].runId, 'r7');
});

test('an edit the editor declined is not reported as applied', async () => {
  const client = new FakeClient();
  client.handlers['workspace/executeCommand'] = () => ({ applied: false, runId: 'r1' });
  const { s, shownErrors } = services(client);
  const applied: unknown[] = [];
  assert.equal(await applyResult({ client: () => client, errors: s.errors, log: () => undefined, applied: (r) => applied.push(r) }, ref), false);
  assert.deepEqual(applied, []);
  assert.deepEqual(shownErrors, []);
  assert.match(mock.messages.at(-1)!.message, /was not applied/);
});

test("the server's refusal (target changed) reaches the user as one error", async () => {
  const client = new FakeClient();
  client.handlers['workspace/executeCommand'] = () => Promise.reject(new Error("'softmax' changed since the search of run r1 started; undo the change or optimize it again"));
  const { s, shownErrors } = services(client);
  assert.equal(await applyResult({ client: () => client, errors: s.errors, log: () => undefined }, ref), false);
  assert.equal(shownErrors.length, 1);
  assert.match(shownErrors[0], /could not apply the result for softmax: 'softmax' changed since the search/);
});

test('no server: says so and sends nothing', async () => {
  const { s, shownErrors } = services(undefined);
  assert.equal(await applyResult({ client: () => undefined, errors: s.errors, log: () => undefined }, ref), false);
  assert.match(shownErrors[0], /not running/);
});
