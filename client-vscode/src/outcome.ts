/**
 * How a run ended, as the engine decided it (kernelevo/outcome.py; the server passes the record
 * through unchanged). The extension never judges speedups itself: "improved", the sentence a
 * person reads, and whether Apply is offered all come from this one record.
 */

export type OutcomeKind = 'improved' | 'verified_unmeasured' | 'no_improvement' | 'no_verified_candidate' | 'failed' | 'cancelled';

export interface RunOutcome {
  kind: OutcomeKind;
  speedup_eager: number | null;
  speedup_compile: number | null;
  /** Where the best candidate was verified: 'cuda' or 'cpu'. */
  device: string;
  reasons: string[];
  /** An improved run's kernel against torch.compile: 'beats' or 'matches' (level within the noise); '' when not timed. */
  versus_compile: string;
  improved: boolean;
  /** A faster kernel, or one verified on the CPU (offered under that label); never a no-improvement run. */
  applicable: boolean;
  /** The same sentence the CLI prints, e.g. "verified, speed not measured without a GPU". */
  headline: string;
}

const KINDS: readonly OutcomeKind[] = ['improved', 'verified_unmeasured', 'no_improvement', 'no_verified_candidate', 'failed', 'cancelled'];

/** The outcome of a job result, or undefined when the server sent none (an older server). */
export function readOutcome(value: unknown): RunOutcome | undefined {
  if (!value || typeof value !== 'object') {
    return undefined;
  }
  const o = value as Partial<RunOutcome>;
  if (!KINDS.includes(o.kind as OutcomeKind) || typeof o.headline !== 'string') {
    return undefined;
  }
  return {
    kind: o.kind as OutcomeKind,
    speedup_eager: typeof o.speedup_eager === 'number' ? o.speedup_eager : null,
    speedup_compile: typeof o.speedup_compile === 'number' ? o.speedup_compile : null,
    device: typeof o.device === 'string' ? o.device : '',
    reasons: Array.isArray(o.reasons) ? o.reasons.map(String) : [],
    versus_compile: typeof o.versus_compile === 'string' ? o.versus_compile : '',
    improved: o.kind === 'improved',
    applicable: o.kind === 'improved' || o.kind === 'verified_unmeasured',
    headline: o.headline,
  };
}
