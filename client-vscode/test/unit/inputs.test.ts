import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { askExampleInputs, needsInputs } from '../../src/inputs';
import { optimizeTarget, OptimizeDeps } from '../../src/optimize';
import { DEFAULTS } from '../../src/settings';
import { FakeClient, mock, services } from './fakes';

const ref = { uri: 'file:///w/scale.py', targetId: 'module:Scale', label: 'Scale' };
const FAILED = '/w/scale.py:4: no example inputs for Scale; add `@kernelevo.example(...)` above it. Tried without edits: none of 16 guessed input sets fits';
const GUESS = { inputs: '(torch.randn(8, 1024), torch.randn(8, 1024))', init: '(1024,)', params: ['x', 'table'], init_params: ['dim'], targetName: 'Scale', reason: 'none of 16 guessed input sets fits Scale' };

function serverWithGuess(recorded: unknown[][]) {
  const client = new FakeClient();
  client.handlers['workspace/executeCommand'] = async (params) => {
    if (params.command === 'kernelevo.exampleInputs') {
      return GUESS;
    }
    recorded.push(params.arguments);
    return { applied: true };
  };
  return client;
}

beforeEach(() => mock.reset());

test('the engine\'s "no example inputs" failure is recognised', () => {
  assert.equal(needsInputs(FAILED), true);
  assert.equal(needsInputs('no candidate compiled'), false);
  assert.equal(needsInputs(undefined), false);
});

test('the input box shows the best guess and the reason; the answers are recorded, saved and optimized again', async () => {
  const recorded: unknown[][] = [];
  const client = serverWithGuess(recorded);
  const { s } = services(client);
  mock.documents.set(ref.uri, 'class Scale: ...\n');
  const boxes: any[] = [];
  mock.inputBox = (o) => (boxes.push(o), o.value.startsWith('(torch') ? '(torch.randn(8, 64), {"scale": 2.0})' : '(64,)');
  const again: string[] = [];
  const ok = await askExampleInputs({ client: () => client, errors: s.errors, optimize: (r) => again.push(r.targetId) }, ref);
  assert.equal(ok, true);
  assert.equal(boxes[0].value, GUESS.inputs);
  assert.match(boxes[0].title, /example inputs for Scale\(x, table\)/);
  assert.match(boxes[0].prompt, /none of 16 guessed input sets fits Scale/);
  assert.match(boxes[1].title, /constructor arguments for Scale\(dim\)/);
  assert.equal(boxes[0].validateInput(''), 'One line of Python, e.g. (torch.randn(8, 1024),)');
  assert.deepEqual(recorded, [[ref.uri, ref.targetId, '(torch.randn(8, 64), {"scale": 2.0})', '(64,)']]);
  assert.deepEqual(mock.saved, [ref.uri]);
  assert.deepEqual(again, [ref.targetId]);
});

test('Escape in the input box records nothing and starts nothing', async () => {
  const recorded: unknown[][] = [];
  const client = serverWithGuess(recorded);
  const { s } = services(client);
  const again: string[] = [];
  const ok = await askExampleInputs({ client: () => client, errors: s.errors, optimize: (r) => again.push(r.targetId) }, ref);
  assert.equal(ok, false);
  assert.deepEqual([recorded, again, mock.saved], [[], [], []]);
});

test('a search that failed for lack of inputs asks for them instead of reporting an error', async () => {
  const client = new FakeClient();
  client.handlers['kernelevo/optimize'] = async () => ({ jobId: 'j1', runId: '', status: 'failed', message: FAILED, tokens: 0, costUsd: 0 });
  const { s, shownErrors } = services(client);
  const asked: string[] = [];
  const d: OptimizeDeps = {
    client: () => client,
    board: s.board,
    settings: () => ({ ...DEFAULTS, provider: 'offline' }),
    hasKeyFor: async () => true,
    errors: s.errors,
    log: () => undefined,
    newToken: () => 'tok-1',
    showDiff: () => undefined,
    apply: () => undefined,
    openReport: () => undefined,
    askInputs: (r) => asked.push(r.targetId),
  };
  await optimizeTarget(d, ref);
  await mock.settle();
  assert.deepEqual(asked, [ref.targetId]);
  assert.deepEqual(shownErrors, []);
});

test('Accept TF32: the server writes the comment, the file is saved and optimized again at that level', async () => {
  const { acceptPrecision } = await import('../../src/precision');
  const { targetFromArguments } = await import('../../src/protocol');
  const client = new FakeClient();
  const sent: unknown[] = [];
  client.handlers['workspace/executeCommand'] = async (params) => (sent.push(params), { applied: true, level: 'tf32' });
  const { s } = services(client);
  mock.documents.set(ref.uri, 'class Scale: ...\n');
  const lensRef = targetFromArguments('kernelevo.acceptPrecision', [ref.uri, ref.targetId, 'tf32'])!;
  assert.equal(lensRef.level, 'tf32');
  const again: any[] = [];
  assert.equal(await acceptPrecision({ client: () => client, errors: s.errors, optimize: (r) => again.push(r) }, lensRef), true);
  assert.deepEqual(sent, [{ command: 'kernelevo.acceptPrecision', arguments: [ref.uri, ref.targetId, 'tf32'] }]);
  assert.deepEqual(mock.saved, [ref.uri]);
  assert.deepEqual(again, [{ uri: ref.uri, targetId: ref.targetId, label: 'Scale' }]);
});
