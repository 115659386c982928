import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorReporter, errorKey, messageOf, USER_REPEAT_MS } from '../../src/errors';

function sink(choice?: string) {
  const shown: { message: string; buttons: string[] }[] = [];
  const logged: string[] = [];
  return { shown, logged, show: async (message: string, buttons: string[]) => (shown.push({ message, buttons }), choice), log: (m: string) => logged.push(m) };
}

const settle = () => new Promise((r) => setImmediate(r));

test('the same error is shown once; repeats only reach the log', () => {
  const s = sink();
  const errors = new ErrorReporter(s, () => undefined);
  assert.equal(errors.report('Server crashed (exit 1) after 12 s'), true);
  assert.equal(errors.report('Server crashed (exit 1) after 13 s'), false);
  assert.equal(s.shown.length, 1);
  assert.equal(s.logged.length, 2);
  assert.deepEqual(s.shown[0].buttons, ['Show Log']);
});

test('a flood of different errors is capped per minute', () => {
  const s = sink();
  let now = 0;
  const errors = new ErrorReporter(s, () => undefined, () => now, 3);
  for (const word of ['alpha', 'beta', 'gamma', 'delta', 'epsilon']) {
    errors.report(`failure ${word}`);
  }
  assert.equal(s.shown.length, 3);
  now = 61_000;
  errors.report('failure zeta');
  assert.equal(s.shown.length, 4);
});

test('actions run when chosen; forget lets an error show again', async () => {
  let restarted = 0;
  let logShown = 0;
  const s = sink('Restart Server');
  const errors = new ErrorReporter(s, () => logShown++);
  errors.report('stopped', { key: 'server', actions: [{ title: 'Restart Server', run: () => restarted++ }] });
  await settle();
  assert.equal(restarted, 1);
  assert.deepEqual(s.shown[0].buttons, ['Restart Server', 'Show Log']);
  assert.equal(errors.report('stopped', { key: 'server' }), false);
  errors.forget('server');
  assert.equal(errors.report('stopped', { key: 'server' }), true);
  assert.equal(logShown, 0);
});

test('error keys ignore numbers and hashes; messages come from anything thrown', () => {
  assert.equal(errorKey('run 3f2a9c81d0 failed at 12'), errorKey('run 77aa00bbcc failed at 13'));
  assert.equal(messageOf(new Error('x')), 'x');
  assert.equal(messageOf({ message: 'y', code: 1 }), 'y');
  assert.equal(messageOf('z'), 'z');
});

test("a failure the server already announced (window/showMessage) is not shown twice", () => {
  const s = sink();
  let now = 0;
  const errors = new ErrorReporter(s, () => undefined, () => now);
  errors.fromServer('KernelEvo: softmax changed since the search started', 'error');
  assert.equal(errors.reportFailure('No proposal to show for softmax: softmax changed since the search started', 'softmax changed since the search started'), false);
  assert.equal(s.shown.length, 1);
  assert.equal(s.logged.length, 2, 'both are logged');
  now += USER_REPEAT_MS + 1;
  assert.equal(errors.reportFailure('No proposal to show for softmax: softmax changed since the search started', 'softmax changed since the search started'), true);
});

test('user-triggered failures may show again after a pause; background errors only once', () => {
  const s = sink();
  let now = 0;
  const errors = new ErrorReporter(s, () => undefined, () => now, 100);
  assert.equal(errors.reportFailure('Optimizing x failed: save x.py first', 'save x.py first'), true);
  assert.equal(errors.reportFailure('Optimizing x failed: save x.py first', 'save x.py first'), false);
  errors.report('server stopped', { key: 'server' });
  now += USER_REPEAT_MS + 1;
  assert.equal(errors.reportFailure('Optimizing x failed: save x.py first', 'save x.py first'), true);
  assert.equal(errors.report('server stopped', { key: 'server' }), false);
});

test('info messages from the server carry no Show Log button', () => {
  const s = sink();
  const errors = new ErrorReporter(s, () => undefined);
  errors.fromServer('KernelEvo: softmax: 1.42x faster', 'info');
  assert.deepEqual(s.shown[0].buttons, []);
});
