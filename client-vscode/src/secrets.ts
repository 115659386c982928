/**
 * API keys live in VS Code's SecretStorage (the OS keychain) and reach the server only through
 * its process environment: never settings, never logs, never the workspace.
 */

/** Providers that take a key, and the variable the engine reads it from (kernelevo/llm/provider_config.py). */
export const PROVIDER_ENV: Readonly<Record<string, string>> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  openrouter: 'OPENROUTER_API_KEY',
  deepseek: 'DEEPSEEK_API_KEY',
  vllm: 'VLLM_API_KEY',
  sglang: 'SGLANG_API_KEY',
  ollama: 'OLLAMA_API_KEY',
};

/** Providers that run without a key: no model at all, or a local server where a key is optional. */
export const KEYLESS_PROVIDERS: readonly string[] = ['offline', 'replay', 'vllm', 'sglang', 'ollama'];

/** The part of `vscode.SecretStorage` used here. */
export interface SecretStore {
  get(key: string): PromiseLike<string | undefined>;
  store(key: string, value: string): PromiseLike<void>;
  delete(key: string): PromiseLike<void>;
}

export function secretKey(provider: string): string {
  return `kernelevo.apiKey.${provider}`;
}

/** A key looks plausible: one line, no spaces, not absurdly short. Returns the problem, or undefined. */
export function validateApiKey(value: string): string | undefined {
  const key = value.trim();
  if (!key) {
    return 'Enter a key, or press Escape to cancel.';
  }
  if (/\s/.test(key)) {
    return 'An API key has no spaces or line breaks.';
  }
  if (key.length < 8) {
    return 'That is too short to be an API key.';
  }
  return undefined;
}

/** Shows enough of a key to recognise it, e.g. "sk-a…wxyz". */
export function maskKey(key: string): string {
  return key.length <= 8 ? '•'.repeat(key.length) : `${key.slice(0, 4)}…${key.slice(-4)}`;
}

export class ApiKeys {
  constructor(private readonly secrets: SecretStore) {}

  async get(provider: string): Promise<string | undefined> {
    return (await this.secrets.get(secretKey(provider))) || undefined;
  }

  async set(provider: string, key: string): Promise<void> {
    await this.secrets.store(secretKey(provider), key.trim());
  }

  async clear(provider: string): Promise<void> {
    await this.secrets.delete(secretKey(provider));
  }

  /** Every stored key as the environment variables the engine reads. */
  async environment(): Promise<Record<string, string>> {
    const env: Record<string, string> = {};
    for (const [provider, name] of Object.entries(PROVIDER_ENV)) {
      const key = await this.get(provider);
      if (key) {
        env[name] = key;
      }
    }
    return env;
  }

  /** True when `provider` can run: it needs no key, has a stored key, or one is already in `baseEnv`. */
  async hasKeyFor(provider: string, baseEnv: Record<string, string | undefined>): Promise<boolean> {
    if (KEYLESS_PROVIDERS.includes(provider)) {
      return true;
    }
    const name = PROVIDER_ENV[provider];
    if (!name) {
      return true;
    }
    return Boolean(baseEnv[name]) || Boolean(await this.get(provider));
  }
}

/**
 * The server's environment: the editor's own, plus stored keys (which win), plus a flag that
 * keeps Python from putting the working folder first on `sys.path`.
 */
export function serverEnvironment(
  base: Record<string, string | undefined>,
  keys: Record<string, string>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined) {
      env[name] = value;
    }
  }
  Object.assign(env, keys);
  env.PYTHONSAFEPATH = '1';
  env.PYTHONUNBUFFERED = '1';
  return env;
}
