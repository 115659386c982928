import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { discardProposals, parseProposalUri, proposalUri, showProposal, VirtualTextStore } from '../../src/diff';
import { Uri } from '../mock/vscode';
import { FakeClient, mock, services } from './fakes';

beforeEach(() => mock.reset());

const ref = { uri: 'file:///w/softmax.py', targetId: 'function:softmax#a1', label: 'softmax' };

test('proposal URIs keep the file name and round-trip their key (even with # in a target id)', () => {
  const key = { file: 'file:///w/my%20dir/softmax.py', targetId: 'function:softmax#a1?x', runId: 'run-1' };
  const uri = proposalUri(key);
  assert.equal(uri.scheme, 'kernelevo-proposal');
  assert.ok(uri.path.endsWith('/softmax.py'));
  const again = Uri.parse(uri.toString());
  assert.deepEqual(parseProposalUri(again as any), key);
  assert.equal(parseProposalUri(Uri.parse('file:///w/softmax.py') as any), undefined);
  assert.equal(parseProposalUri(Uri.from({ scheme: 'kernelevo-proposal', path: '/x', query: 'nope' }) as any), undefined);
});

test('Show diff opens the diff editor between the file and a virtual proposal, then offers Apply', async () => {
  const client = new FakeClient();
  client.handlers['kernelevo/proposal'] = () => ({ runId: 'r7', files: [{ uri: ref.uri, oldText: 'old\n', newText: 'new\n' }] });
  const { s } = services(client);
  mock.existing.add(ref.uri);
  const applied: unknown[] = [];
  mock.answer = (m) => (m.items.includes('Apply') ? 'Apply' : undefined);
  const opened = await showProposal({ client: () => client, store: s.proposals, errors: s.errors, apply: (r) => applied.push(r) }, ref);
  await mock.settle();
  assert.deepEqual(client.sent('kernelevo/proposal')[0].params, { uri: ref.uri, targetId: ref.targetId });
  const diff = mock.executed.find((e) => e.command === 'vscode.diff')!;
  const [left, right, title] = diff.args as [any, any, string];
  assert.equal(left.toString(), ref.uri);
  assert.equal(right.toString(), opened[0].toString());
  assert.equal(right.scheme, 'kernelevo-proposal');
  assert.match(title, /softmax\.py ↔ KernelEvo proposal for softmax \(run r7\)/);
  assert.equal(s.proposals.provideTextDocumentContent(right), 'new\n');
  assert.deepEqual(mock.messages.at(-1)!.items, ['Apply', 'Discard']);
  assert.deepEqual(applied, [{ ...ref, runId: 'r7' }]);
});

test('Discard closes the diff tab and forgets the text', async () => {
  const store = new VirtualTextStore();
  const uri = proposalUri({ file: ref.uri, targetId: ref.targetId, runId: 'r7' });
  store.put(uri, 'new\n');
  const tab = { input: { original: Uri.parse(ref.uri), modified: uri } };
  mock.tabs.push(tab, { input: { uri: Uri.parse('file:///w/other.py') } });
  await discardProposals(store, [uri]);
  assert.deepEqual(mock.closedTabs, [tab]);
  assert.equal(store.has(uri), false);
  assert.match(store.provideTextDocumentContent(uri), /no longer available/);
});

test('a proposal the server refuses (target changed) or that changes nothing is explained', async () => {
  const client = new FakeClient();
  const { s, shownErrors } = services(client);
  client.handlers['kernelevo/proposal'] = () => Promise.reject(new Error('softmax changed since the search started'));
  assert.deepEqual(await showProposal({ client: () => client, store: s.proposals, errors: s.errors, apply: () => undefined }, ref), []);
  assert.deepEqual(shownErrors, ['No proposal to show for softmax: softmax changed since the search started']);
  client.handlers['kernelevo/proposal'] = () => ({ runId: 'r', files: [{ uri: ref.uri, oldText: 'same', newText: 'same' }] });
  assert.deepEqual(await showProposal({ client: () => client, store: s.proposals, errors: s.errors, apply: () => undefined }, { ...ref, runId: 'r' }), []);
  assert.equal(client.sent('kernelevo/proposal')[1].params.runId, 'r');
  assert.match(mock.messages.at(-1)!.message, /changes nothing/);
  assert.equal(mock.executed.length, 0);
});

test('a proposal that adds a file shows all files; the new one against an empty page', async () => {
  const client = new FakeClient();
  const kernel = 'file:///w/softmax_kernelevo.py';
  client.handlers['kernelevo/proposal'] = () => ({
    runId: 'r8',
    files: [
      { uri: ref.uri, oldText: 'old\n', newText: 'from softmax_kernelevo import ModelNew\n' },
      { uri: kernel, oldText: '', newText: '@triton.jit\ndef k(): ...\n' },
    ],
  });
  mock.existing.add(ref.uri);
  const { s } = services(client);
  await showProposal({ client: () => client, store: s.proposals, errors: s.errors, apply: () => undefined }, ref);
  const changes = mock.executed.find((e) => e.command === 'vscode.changes')!;
  const [title, pairs] = changes.args as [string, any[][]];
  assert.match(title, /run r8/);
  assert.equal(pairs.length, 2);
  assert.equal(pairs[0][1].toString(), ref.uri);
  const base = pairs[1][1];
  assert.equal(base.scheme, 'kernelevo-proposal');
  assert.equal(s.proposals.provideTextDocumentContent(base), '');
  assert.match(s.proposals.provideTextDocumentContent(pairs[1][2]), /triton\.jit/);
});
