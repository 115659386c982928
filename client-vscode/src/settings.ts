/**
 * The `kernelevo.*` settings: read once from VS Code's configuration and turned into the
 * object the server expects (PROTOCOLS.md, "Settings"). The interpreter stays on the client:
 * it decides how the server starts, so a change restarts the server instead.
 */

export type Backend = 'triton' | 'cuda' | 'auto';

export interface KernelEvoSettings {
  provider: string;
  model: string;
  budgetTokens: number;
  budgetUsd: number;
  backend: Backend;
  gpu: number;
  interpreter: string;
  storePath: string;
  diagnostics: boolean;
  maxJobsPerGpu: number;
}

/** What `initializationOptions` and `workspace/didChangeConfiguration` carry. */
export interface ServerSettings {
  provider: string;
  model: string | null;
  budgetTokens: number | null;
  budgetUsd: number | null;
  backend: Backend;
  gpu: number;
  storePath: string | null;
  diagnostics: boolean;
  maxJobsPerGpu: number;
}

/** The part of `vscode.WorkspaceConfiguration` this module needs. */
export interface ConfigReader {
  get<T>(key: string): T | undefined;
}

export const DEFAULTS: KernelEvoSettings = {
  provider: 'anthropic',
  model: '',
  budgetTokens: 500_000,
  budgetUsd: 5,
  backend: 'auto',
  gpu: 0,
  interpreter: '',
  storePath: '',
  diagnostics: true,
  maxJobsPerGpu: 1,
};

const BACKENDS: readonly Backend[] = ['triton', 'cuda', 'auto'];

/** Keys whose change needs a new server process (it only reads them at start). */
export const RESTART_KEYS = ['interpreter'] as const;

function nonNegative(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : fallback;
}

function text(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value.trim() : fallback;
}

export function readSettings(config: ConfigReader): KernelEvoSettings {
  const backend = config.get<string>('backend');
  return {
    provider: text(config.get('provider'), DEFAULTS.provider) || DEFAULTS.provider,
    model: text(config.get('model'), DEFAULTS.model),
    budgetTokens: Math.floor(nonNegative(config.get('budgetTokens'), DEFAULTS.budgetTokens)),
    budgetUsd: nonNegative(config.get('budgetUsd'), DEFAULTS.budgetUsd),
    backend: BACKENDS.includes(backend as Backend) ? (backend as Backend) : DEFAULTS.backend,
    gpu: Math.floor(nonNegative(config.get('gpu'), DEFAULTS.gpu)),
    interpreter: text(config.get('interpreter'), DEFAULTS.interpreter),
    storePath: text(config.get('storePath'), DEFAULTS.storePath),
    diagnostics: typeof config.get('diagnostics') === 'boolean' ? Boolean(config.get('diagnostics')) : DEFAULTS.diagnostics,
    maxJobsPerGpu: Math.max(1, Math.floor(nonNegative(config.get('maxJobsPerGpu'), DEFAULTS.maxJobsPerGpu))),
  };
}

/**
 * Expands `${workspaceFolder}`, `${userHome}` and a leading `~` the way VS Code users expect
 * in path settings; relative paths are taken from the workspace folder.
 */
export function expandPath(value: string, workspaceFolder: string | undefined, home: string): string {
  if (!value) {
    return value;
  }
  let out = value.replace(/\$\{userHome\}/g, home);
  if (workspaceFolder) {
    out = out.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
  }
  if (out === '~' || out.startsWith('~/')) {
    out = home + out.slice(1);
  }
  const absolute = out.startsWith('/') || /^[A-Za-z]:[\\/]/.test(out) || out.startsWith('\\\\');
  const looksLikePath = out.includes('/') || out.includes('\\');
  if (!absolute && looksLikePath && workspaceFolder) {
    out = `${workspaceFolder.replace(/[\\/]+$/, '')}/${out.replace(/^\.[\\/]/, '')}`;
  }
  return out;
}

/** 0 means "no limit" for both budgets; the server gets null for it. */
export function serverSettings(s: KernelEvoSettings, workspaceFolder: string | undefined, home: string): ServerSettings {
  return {
    provider: s.provider,
    model: s.model || null,
    budgetTokens: s.budgetTokens > 0 ? s.budgetTokens : null,
    budgetUsd: s.budgetUsd > 0 ? s.budgetUsd : null,
    backend: s.backend,
    gpu: s.gpu,
    storePath: s.storePath ? expandPath(s.storePath, workspaceFolder, home) : null,
    diagnostics: s.diagnostics,
    maxJobsPerGpu: s.maxJobsPerGpu,
  };
}

/** True when a configuration change touches a key that needs a server restart. */
export function needsRestart(affects: (key: string) => boolean): boolean {
  return RESTART_KEYS.some((key) => affects(`kernelevo.${key}`));
}
