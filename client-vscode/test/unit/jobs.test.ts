import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeJob, JobBoard, parseProgressMessage, statusView } from '../../src/jobs';
import { JobInfo } from '../../src/protocol';

test('progress messages in the documented shape are read', () => {
  assert.deepEqual(parseProgressMessage('iteration 3 · best 1.42x · 12k tokens · $0.12'), { iteration: 3, bestSpeedup: 1.42, tokens: 12000, costUsd: 0.12 });
  assert.deepEqual(parseProgressMessage('iteration 10 · best 2x · 1.5M tokens · $3'), { iteration: 10, bestSpeedup: 2, tokens: 1500000, costUsd: 3 });
  assert.deepEqual(parseProgressMessage('candidate 7: verified'), {});
  assert.deepEqual(parseProgressMessage(undefined), {});
});

test('the status bar shows running jobs and the best speedup so far', () => {
  const board = new JobBoard(() => 1000);
  assert.equal(statusView(board).text, '$(beaker) KernelEvo');
  board.start('t1', 'file:///a.py', 'module:RMSNorm', 'RMSNorm');
  board.progress('t1', 'iteration 2 · best 1.30x · 5k tokens · $0.05');
  board.start('t2', 'file:///a.py', 'function:gelu', 'gelu');
  board.progress('t2', 'iteration 1 · best 1.42x · 2k tokens · $0.02');
  let view = statusView(board);
  assert.equal(view.text, '$(sync~spin) KernelEvo: 2 jobs · best 1.42x');
  assert.equal(view.busy, true);
  assert.match(view.tooltip, /RMSNorm: iteration 2/);
  board.finish('t2', 'improved', { jobId: 'j2', runId: 'r2', bestSpeedup: 1.5 });
  view = statusView(board);
  assert.equal(view.text, '$(sync~spin) KernelEvo: 1 job · best 1.50x');
  board.finish('t1', 'cancelled');
  assert.equal(statusView(board).text, '$(beaker) KernelEvo · best 1.50x');
  assert.equal(statusView(board).busy, false);
});

test('change events fire on every update', () => {
  const board = new JobBoard();
  let changes = 0;
  const sub = board.onDidChange(() => changes++);
  board.start('t', 'file:///a.py', 'x');
  board.progress('t', 'iteration 1');
  board.finish('t', 'no_improvement');
  sub.dispose();
  board.start('u', 'file:///a.py', 'y');
  assert.equal(changes, 3);
});

test("the server's job list fills in job ids and adds jobs started elsewhere", () => {
  const board = new JobBoard();
  board.start('local', 'file:///a.py', 'module:RMSNorm', 'RMSNorm');
  const info = (over: Partial<JobInfo>): JobInfo => ({
    jobId: 'j1',
    uri: 'file:///a.py',
    targetId: 'module:RMSNorm',
    runId: 'r1',
    state: 'running',
    iteration: 4,
    bestSpeedup: 1.2,
    tokens: 100,
    costUsd: 0.01,
    startedAt: 0,
    ...over,
  });
  board.sync([info({}), info({ jobId: 'j9', targetId: 'function:other', runId: 'r9' })]);
  const local = board.get('local')!;
  assert.equal(local.jobId, 'j1');
  assert.equal(local.runId, 'r1');
  assert.equal(local.iteration, 4);
  assert.equal(board.running().length, 2);
  assert.equal(board.get('server:j9')!.runId, 'r9');
  // A finished local job keeps its own final state; a server job that disappears has ended.
  board.finish('local', 'improved', { bestSpeedup: 1.6 });
  board.sync([info({ state: 'running' })]);
  assert.equal(board.get('local')!.state, 'improved');
  assert.equal(board.get('server:j9')!.state, 'ended');
  assert.equal(board.best(), 1.6);
});

test('jobs are described in one line each', () => {
  const board = new JobBoard();
  const job = board.start('k', 'file:///w/softmax.py', 'function:softmax', 'softmax');
  board.progress('k', 'iteration 3 · best 1.42x · 12k tokens · $0.12');
  job.runId = 'run-1';
  assert.deepEqual(describeJob(job), { label: 'softmax', description: 'running · iteration 3 · best 1.42x · 12k tokens · $0.12', detail: 'softmax.py · run run-1' });
});
