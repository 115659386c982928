/**
 * The server's custom LSP surface, as written in docs/PROTOCOLS.md. The extension and the
 * end-to-end test both use these names, so a protocol change breaks the build here first.
 */
import type { OutcomeKind, RunOutcome } from './outcome';

export const Methods = {
  optimize: 'kernelevo/optimize',
  jobs: 'kernelevo/jobs',
  cancel: 'kernelevo/cancel',
  proposal: 'kernelevo/proposal',
} as const;

/** Commands the server advertises through `workspace/executeCommand`. */
export const ServerCommands = {
  optimize: 'kernelevo.optimize',
  showDiff: 'kernelevo.showDiff',
  apply: 'kernelevo.apply',
  acceptPrecision: 'kernelevo.acceptPrecision',
} as const;

export const ActionKinds = {
  apply: 'refactor.rewrite.kernelevo.apply',
  optimize: 'source.kernelevo.optimize',
} as const;

export type Backend = 'triton' | 'cuda' | 'auto';

export interface OptimizeParams {
  uri: string;
  targetId: string;
  backend?: Backend;
  provider?: string;
  model?: string;
  budgetTokens?: number;
  budgetUsd?: number;
  iterations?: number;
  workDoneToken?: string | number;
}

export interface OptimizeResult {
  jobId: string;
  runId: string;
  /** The outcome's kind (kernelevo/outcome.py); read `outcome` for what it means. */
  status: OutcomeKind | string;
  /** The engine's judgement of the run, passed through by the server. */
  outcome?: RunOutcome | null;
  bestSpeedup: number | null;
  bestSpeedupCompile: number | null;
  tokens: number;
  costUsd: number;
  /** The server's last word on the job (e.g. why it failed). */
  message?: string | null;
}

export interface JobInfo {
  jobId: string;
  uri: string;
  targetId: string;
  runId: string | null;
  state: string;
  iteration: number;
  bestSpeedup: number | null;
  tokens: number;
  costUsd: number;
  startedAt: number | string;
  message?: string | null;
}

export interface CancelParams {
  jobId: string;
}

export interface CancelResult {
  cancelled: boolean;
}

export interface ProposalParams {
  uri: string;
  targetId: string;
  runId?: string;
}

/** The answer to `workspace/executeCommand kernelevo.apply`. */
export interface ApplyResult {
  applied: boolean;
  runId: string;
  /** Why not, when the server knows (e.g. "not confirmed"). */
  reason?: string;
}

export interface ProposalFile {
  uri: string;
  oldText: string;
  newText: string;
}

export interface ProposalResult {
  runId: string;
  files: ProposalFile[];
}

/** A target the user can act on, taken from a lens, a code action or a command's arguments. */
export interface TargetRef {
  uri: string;
  targetId: string;
  runId?: string;
  backend?: Backend;
  /** A lower precision level to accept ("tf32", "bf16"): the Accept TF32 lens. */
  level?: string;
  /** What to call it in messages, e.g. "softmax". */
  label?: string;
}

/** Job states that mean "still going". */
export function isRunningState(state: string): boolean {
  return ['running', 'queued', 'pending', 'starting'].includes(state);
}

/** Reads `[uri, targetId, third]` command arguments; third is a backend or a run id by command. */
export function targetFromArguments(command: string, args: unknown[] | undefined): TargetRef | undefined {
  if (!args || typeof args[0] !== 'string' || typeof args[1] !== 'string') {
    return undefined;
  }
  const ref: TargetRef = { uri: args[0], targetId: args[1] };
  const third = args[2];
  if (typeof third === 'string' && third) {
    if (command === ServerCommands.optimize) {
      if (third === 'triton' || third === 'cuda' || third === 'auto') {
        ref.backend = third;
      }
    } else if (command === ServerCommands.acceptPrecision) {
      ref.level = third;
    } else {
      ref.runId = third;
    }
  }
  return ref;
}

/** "function:softmax_rows#ab12" → "softmax_rows": a readable name from a target id. */
export function targetLabel(targetId: string): string {
  const afterKind = targetId.includes(':') ? targetId.slice(targetId.indexOf(':') + 1) : targetId;
  const name = afterKind.split('#')[0];
  return name || targetId;
}
