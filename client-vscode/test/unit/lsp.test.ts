import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RequestSender, sendWith } from '../../src/lsp';

test('a request without a cancellation token is sent with its params only (not [params, null])', async () => {
  const calls: unknown[][] = [];
  const raw: RequestSender = { sendRequest: async (...args: unknown[]) => (calls.push(args), null) };
  const send = sendWith(raw);
  await send('kernelevo/jobs', {});
  const token = { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) };
  await send('kernelevo/optimize', { uri: 'u' }, token as never);
  assert.deepEqual(calls[0], ['kernelevo/jobs', {}]);
  assert.equal(calls[1].length, 3);
  assert.equal(calls[1][2], token);
});
