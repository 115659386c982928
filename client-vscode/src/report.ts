/**
 * "Open report": what is known about one run, as a Markdown preview. Built from the job list
 * the server keeps (`kernelevo/jobs`) and what this window saw, so it works for finished runs too.
 */
import * as vscode from 'vscode';
import { formatSpeedup, formatTokens, JobView } from './jobs';
import { TargetRef, targetLabel } from './protocol';

export const REPORT_SCHEME = 'kernelevo-report';

export function reportMarkdown(ref: TargetRef, job: JobView | undefined, now: Date = new Date()): string {
  const label = ref.label ?? job?.label ?? targetLabel(ref.targetId);
  const file = vscode.Uri.parse(ref.uri);
  const name = file.path.split('/').pop() ?? ref.uri;
  const runId = ref.runId ?? job?.runId ?? undefined;
  const rows: [string, string][] = [
    ['Target', `\`${ref.targetId}\``],
    ['File', name],
    ['Run', runId ? `\`${runId}\`` : 'unknown'],
    ['State', job?.state ?? 'finished'],
    ['Best speedup (vs eager)', formatSpeedup(job?.bestSpeedup)],
    ['Iterations', String(job?.iteration ?? '–')],
    ['Tokens', formatTokens(job?.tokens)],
    ['Cost', `$${(job?.costUsd ?? 0).toFixed(2)}`],
  ];
  const lines = [
    `# KernelEvo report: ${label}`,
    '',
    '| | |',
    '|---|---|',
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
    '',
    job?.message ? `Last progress: ${job.message}` : '',
    '',
    'With the cursor in the target: **KernelEvo: Show Result Diff** to review the rewrite, **KernelEvo: Apply Result** to apply it.',
    '',
    `_Generated ${now.toISOString()}. Speedups are measured against the PyTorch reference on this machine's GPU; only verified candidates count._`,
    '',
  ];
  return lines.join('\n');
}

export function reportUri(ref: TargetRef, runId: string | undefined): vscode.Uri {
  const label = (ref.label ?? targetLabel(ref.targetId)).replace(/[^A-Za-z0-9_.-]+/g, '_');
  return vscode.Uri.from({ scheme: REPORT_SCHEME, path: `/${label}-${runId ?? 'latest'}.md` });
}
