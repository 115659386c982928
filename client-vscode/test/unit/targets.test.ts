import assert from 'node:assert/strict';
import { test } from 'node:test';
import { targetFromArguments, targetLabel } from '../../src/protocol';
import { targetsFrom } from '../../src/answers';

const range = (a: number, b: number) => ({ start: { line: a, character: 0 }, end: { line: b, character: 0 } });

test('command arguments: a backend for optimize, a run id for showDiff/apply', () => {
  assert.deepEqual(targetFromArguments('kernelevo.optimize', ['file:///a.py', 'm:X', 'triton']), { uri: 'file:///a.py', targetId: 'm:X', backend: 'triton' });
  assert.deepEqual(targetFromArguments('kernelevo.showDiff', ['file:///a.py', 'm:X', 'run-7']), { uri: 'file:///a.py', targetId: 'm:X', runId: 'run-7' });
  assert.equal(targetFromArguments('kernelevo.apply', ['file:///a.py']), undefined);
  assert.equal(targetFromArguments('kernelevo.apply', undefined), undefined);
});

test('labels come from target ids', () => {
  assert.equal(targetLabel('module:Block.RMSNorm'), 'Block.RMSNorm');
  assert.equal(targetLabel('function:softmax#ab12'), 'softmax');
  assert.equal(targetLabel('plain'), 'plain');
});

test('targets at the cursor: innermost first, run ids merged from result lenses, foreign lenses ignored', () => {
  const lenses = [
    { range: range(0, 40), command: { title: 'Optimize', command: 'kernelevo.optimize', arguments: ['file:///a.py', 'module:Block', 'auto'] } },
    { range: range(10, 20), command: { title: 'Optimize', command: 'kernelevo.optimize', arguments: ['file:///a.py', 'module:Block.RMSNorm', 'auto'] } },
    { range: range(10, 20), command: { title: '1.4x · Show diff', command: 'kernelevo.showDiff', arguments: ['file:///a.py', 'module:Block.RMSNorm', 'run-3'] } },
    { range: range(10, 20), command: { title: 'Run test', command: 'python.runTest', arguments: ['file:///a.py', 'test_x'] } },
    { range: range(50, 60), command: { title: 'Optimize', command: 'kernelevo.optimize', arguments: ['file:///a.py', 'function:far', 'auto'] } },
  ];
  const found = targetsFrom(lenses, [], { line: 12, character: 4 });
  assert.deepEqual(
    found.map((t) => [t.targetId, t.runId]),
    [
      ['module:Block.RMSNorm', 'run-3'],
      ['module:Block', undefined],
    ],
  );
});

test('targets at the cursor also come from source.kernelevo.optimize code actions', () => {
  const actions = [
    { title: 'Optimize softmax', kind: 'source.kernelevo.optimize', command: { title: 'Optimize', command: 'kernelevo.optimize', arguments: ['file:///a.py', 'function:softmax', 'triton'] } },
    { title: 'Organize imports', kind: 'source.organizeImports' },
  ];
  const found = targetsFrom([], actions, { line: 3, character: 0 });
  assert.deepEqual(found.map((t) => [t.targetId, t.backend]), [['function:softmax', 'triton']]);
});
