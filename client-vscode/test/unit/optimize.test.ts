import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { buildOptimizeParams, optimizeTarget, OptimizeDeps, summarize } from '../../src/optimize';
import { DEFAULTS } from '../../src/settings';
import { statusView } from '../../src/jobs';
import { FakeClient, mock, services } from './fakes';
import type { RunOutcome } from '../../src/outcome';

const IMPROVED: RunOutcome = { kind: 'improved', speedup_eager: 1.42, speedup_compile: 1.05, device: 'cuda', reasons: [], versus_compile: 'beats', improved: true, applicable: true, headline: 'verified, 1.42x faster than eager PyTorch, beats torch.compile (1.05x)' };

const ref = { uri: 'file:///w/softmax.py', targetId: 'function:softmax', label: 'softmax' };

function deps(client: FakeClient | undefined, over: Partial<OptimizeDeps> = {}) {
  const { s, shownErrors } = services(client);
  const followUps: string[] = [];
  const d: OptimizeDeps = {
    client: () => client,
    board: s.board,
    settings: () => ({ ...DEFAULTS, provider: 'offline' }),
    hasKeyFor: async () => true,
    errors: s.errors,
    log: () => undefined,
    newToken: () => 'tok-1',
    showDiff: (r) => followUps.push(`diff:${r.runId}`),
    apply: (r) => followUps.push(`apply:${r.runId}`),
    openReport: (r) => followUps.push(`report:${r.runId}`),
    cancelGraceMs: 20,
    ...over,
  };
  return { d, followUps, shownErrors };
}

beforeEach(() => mock.reset());

test('params: settings fill in provider, backend and budgets; zero budgets are left out', () => {
  const p = buildOptimizeParams({ ...ref, backend: 'cuda' }, { ...DEFAULTS, model: 'm1', budgetUsd: 0 }, 'w1');
  assert.deepEqual(p, { uri: ref.uri, targetId: ref.targetId, backend: 'cuda', provider: 'anthropic', model: 'm1', budgetTokens: 500000, workDoneToken: 'w1' });
});

test('a search runs in a cancellable notification with live progress and ends with Show Diff / Apply', async () => {
  const client = new FakeClient();
  client.handlers['kernelevo/optimize'] = async (params) => {
    client.emit(params.workDoneToken, { kind: 'begin', title: 'Optimizing softmax', percentage: 0 });
    client.emit(params.workDoneToken, { kind: 'report', message: 'iteration 1 · best 1.10x · 3k tokens · $0.01', percentage: 25 });
    assert.match(statusView(board).text, /1 job · best 1\.10x/);
    client.emit(params.workDoneToken, { kind: 'report', message: 'iteration 2 · best 1.42x · 6k tokens · $0.02', percentage: 50 });
    client.emit(params.workDoneToken, { kind: 'end', message: 'done' });
    return { jobId: 'j1', runId: 'r1', status: 'improved', outcome: IMPROVED, bestSpeedup: 1.42, bestSpeedupCompile: 1.05, tokens: 6000, costUsd: 0.02 };
  };
  const { d, followUps } = deps(client);
  const board = d.board;
  mock.answer = (m) => (m.items.includes('Show Diff') ? 'Show Diff' : undefined);
  const outcome = await optimizeTarget(d, ref);
  await mock.settle();
  assert.equal(outcome.kind, 'done');
  const [p] = mock.progress;
  assert.equal(p.options.cancellable, true);
  assert.equal(p.options.location, 15);
  assert.match(p.options.title, /softmax/);
  assert.deepEqual(
    p.reports.map((r) => [r.message, r.increment]),
    [
      [undefined, undefined],
      ['iteration 1 · best 1.10x · 3k tokens · $0.01', 25],
      ['iteration 2 · best 1.42x · 6k tokens · $0.02', 25],
      ['done', undefined],
    ],
  );
  const [request] = client.sent('kernelevo/optimize');
  assert.equal(request.params.workDoneToken, 'tok-1');
  assert.equal(request.params.provider, 'offline');
  assert.ok(request.token, 'the request carries a cancellation token');
  assert.equal(client.progress.size, 0, 'progress handler disposed');
  assert.equal(board.running().length, 0);
  assert.equal(board.best(), 1.42);
  const final = mock.messages.at(-1)!;
  assert.equal(final.message, 'softmax: verified, 1.42x faster than eager PyTorch, beats torch.compile (1.05x) (6k tokens, $0.02).');
  assert.deepEqual(final.items, ['Show Diff', 'Apply']);
  assert.deepEqual(followUps, ['diff:r1']);
});

test('cancelling the notification cancels the request ($/cancelRequest) and reports it', async () => {
  const client = new FakeClient();
  client.handlers['kernelevo/optimize'] = (_params, token) =>
    new Promise((_resolve, reject) => {
      token.onCancellationRequested(() => reject({ code: -32800, message: 'Request cancelled' }));
    });
  const { d } = deps(client);
  const running = optimizeTarget(d, ref);
  await mock.settle();
  assert.equal(d.board.running().length, 1);
  mock.progress[0].cancel.cancel();
  const outcome = await running;
  assert.equal(outcome.kind, 'cancelled');
  assert.equal(d.board.running().length, 0);
  assert.match(mock.messages.at(-1)!.message, /cancelled/);
});

test('a server that never confirms a cancel does not leave the notification hanging', async () => {
  const client = new FakeClient();
  client.handlers['kernelevo/optimize'] = () => new Promise(() => undefined);
  const { d } = deps(client);
  const running = optimizeTarget(d, ref);
  await mock.settle();
  mock.progress[0].cancel.cancel();
  assert.equal((await running).kind, 'cancelled');
});

test('no search in an untrusted workspace: nothing is sent, the user is told why', async () => {
  mock.reset();
  const client = new FakeClient();
  const { d } = deps(client);
  (await import('../mock/vscode')).workspace.isTrusted = false;
  mock.answer = () => 'Manage Workspace Trust';
  const outcome = await optimizeTarget(d, ref);
  await mock.settle();
  assert.deepEqual(outcome, { kind: 'blocked', reason: 'untrusted' });
  assert.equal(client.requests.length, 0);
  assert.match(mock.messages[0].message, /untrusted/);
  assert.deepEqual(mock.executed.map((e) => e.command), ['workbench.trust.manage']);
});

test('a provider without a key asks for one instead of failing on the server', async () => {
  const client = new FakeClient();
  const { d } = deps(client, { hasKeyFor: async () => false, settings: () => ({ ...DEFAULTS }) });
  mock.answer = () => 'Set API Key';
  const outcome = await optimizeTarget(d, ref);
  await mock.settle();
  assert.deepEqual(outcome, { kind: 'blocked', reason: 'no-key' });
  assert.equal(client.requests.length, 0);
  assert.deepEqual(mock.executed[0], { command: 'kernelevo.setApiKey', args: ['anthropic'] });
});

test('"Run Anyway" goes ahead without a stored key (the engine may have one in its config file)', async () => {
  const client = new FakeClient();
  client.handlers['kernelevo/optimize'] = () => ({ jobId: 'j', runId: 'r', status: 'no_improvement', bestSpeedup: 0.9, bestSpeedupCompile: null, tokens: 0, costUsd: 0 });
  const { d } = deps(client, { hasKeyFor: async () => false });
  mock.answer = (m) => (m.items.includes('Run Anyway') ? 'Run Anyway' : undefined);
  assert.equal((await optimizeTarget(d, ref)).kind, 'done');
  assert.equal(client.sent('kernelevo/optimize').length, 1);
});

test('a stopped server and a failing request are reported once each', async () => {
  const { d, shownErrors } = deps(undefined);
  assert.deepEqual(await optimizeTarget(d, ref), { kind: 'blocked', reason: 'no-server' });
  await optimizeTarget(d, ref);
  await mock.settle();
  assert.equal(shownErrors.length, 1);

  const client = new FakeClient();
  client.handlers['kernelevo/optimize'] = () => Promise.reject(new Error('target changed since the file was opened'));
  const second = deps(client);
  const outcome = await optimizeTarget(second.d, ref);
  await mock.settle();
  assert.deepEqual(outcome, { kind: 'error', message: 'target changed since the file was opened' });
  assert.match(second.shownErrors[0], /Optimizing softmax failed: target changed/);
});

test("end-of-run sentences are the engine's outcome, as the CLI prints it", () => {
  const base = { jobId: 'j', runId: 'r', bestSpeedup: null, bestSpeedupCompile: null, tokens: 12000, costUsd: 0.1 };
  const cpu = { kind: 'verified_unmeasured', speedup_eager: null, speedup_compile: null, device: 'cpu', reasons: [], versus_compile: '', improved: false, applicable: true, headline: 'verified, speed not measured without a GPU' };
  assert.equal(summarize('x', { ...base, status: 'verified_unmeasured', outcome: cpu as RunOutcome }), 'x: verified, speed not measured without a GPU (12k tokens, $0.10).');
  const slow = { ...cpu, kind: 'no_improvement', device: 'cuda', speedup_eager: 1.2, speedup_compile: 0.9, applicable: false, headline: 'verified, no faster kernel: not faster than torch.compile (0.90x)' };
  assert.equal(summarize('x', { ...base, status: 'no_improvement', outcome: slow as RunOutcome }), 'x: verified, no faster kernel: not faster than torch.compile (0.90x) (12k tokens, $0.10).');
  assert.match(summarize('x', { ...base, status: 'cancelled' }), /cancelled/);
  assert.equal(summarize('x', { ...base, status: 'failed', message: 'reference crashed' }), 'x: the search ended without an outcome: reference crashed.');
});

test('Apply is offered for an applicable outcome only, never for a no-improvement run', async () => {
  for (const [kind, applicable, offered] of [['no_improvement', false, ['Open Report']], ['verified_unmeasured', true, ['Show Diff', 'Apply']]] as const) {
    const client = new FakeClient();
    const outcome = { kind, speedup_eager: null, speedup_compile: null, device: 'cpu', reasons: [], improved: false, applicable, headline: `h-${kind}` };
    client.handlers['kernelevo/optimize'] = () => ({ jobId: 'j', runId: 'r', status: kind, outcome, bestSpeedup: 1.3, bestSpeedupCompile: 0.9, tokens: 0, costUsd: 0 });
    const { d } = deps(client);
    const seen: string[][] = [];
    mock.answer = (m) => (seen.push(m.items), undefined);
    await optimizeTarget(d, ref);
    await mock.settle();
    assert.deepEqual(seen.at(-1), offered, kind);
  }
});
