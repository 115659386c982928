import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiKeys, maskKey, secretKey, serverEnvironment, validateApiKey } from '../../src/secrets';

function memorySecrets() {
  const data = new Map<string, string>();
  return {
    data,
    get: async (k: string) => data.get(k),
    store: async (k: string, v: string) => void data.set(k, v),
    delete: async (k: string) => void data.delete(k),
  };
}

test('keys are stored per provider in SecretStorage and become environment variables', async () => {
  const store = memorySecrets();
  const keys = new ApiKeys(store);
  await keys.set('anthropic', '  sk-ant-123456789  ');
  assert.equal(store.data.get(secretKey('anthropic')), 'sk-ant-123456789');
  assert.deepEqual(await keys.environment(), { ANTHROPIC_API_KEY: 'sk-ant-123456789' });
  await keys.set('openai', 'sk-openai-abcdefgh');
  assert.deepEqual(await keys.environment(), { ANTHROPIC_API_KEY: 'sk-ant-123456789', OPENAI_API_KEY: 'sk-openai-abcdefgh' });
  await keys.clear('anthropic');
  assert.deepEqual(await keys.environment(), { OPENAI_API_KEY: 'sk-openai-abcdefgh' });
});

test('a provider can run with a stored key, a key already in the environment, or no key needed', async () => {
  const keys = new ApiKeys(memorySecrets());
  assert.equal(await keys.hasKeyFor('anthropic', {}), false);
  assert.equal(await keys.hasKeyFor('anthropic', { ANTHROPIC_API_KEY: 'x' }), true);
  assert.equal(await keys.hasKeyFor('offline', {}), true);
  await keys.set('openai', 'sk-openai-abcdefgh');
  assert.equal(await keys.hasKeyFor('openai', {}), true);
});

test('the server environment adds stored keys over the inherited ones and guards sys.path', () => {
  const env = serverEnvironment({ PATH: '/bin', ANTHROPIC_API_KEY: 'old', UNSET: undefined }, { ANTHROPIC_API_KEY: 'new' });
  assert.equal(env.PATH, '/bin');
  assert.equal(env.ANTHROPIC_API_KEY, 'new');
  assert.equal(env.PYTHONSAFEPATH, '1');
  assert.ok(!('UNSET' in env));
});

test('key validation and masking', () => {
  assert.ok(validateApiKey(''));
  assert.ok(validateApiKey('sk ant 123456'));
  assert.ok(validateApiKey('short'));
  assert.equal(validateApiKey('sk-ant-api03-abcdef'), undefined);
  assert.equal(maskKey('sk-ant-api03-abcdefwxyz'), 'sk-a…wxyz');
  assert.ok(!maskKey('12345678').includes('1'));
});
