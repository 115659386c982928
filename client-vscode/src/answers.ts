/**
 * Reading the server's answers (lenses, code actions) into targets and actions. Pure, so the
 * extension and the end-to-end test read them the same way.
 */
import type { CodeAction, CodeLens, Command, Position, Range } from 'vscode-languageclient';
import { ActionKinds, ServerCommands, TargetRef, targetFromArguments, targetLabel } from './protocol';

export interface LocatedTarget extends TargetRef {
  range?: Range;
}

export function contains(range: Range, position: Position): boolean {
  const afterStart = position.line > range.start.line || (position.line === range.start.line && position.character >= range.start.character);
  const beforeEnd = position.line < range.end.line || (position.line === range.end.line && position.character <= range.end.character);
  return afterStart && beforeEnd;
}

function size(range: Range | undefined): number {
  return range ? (range.end.line - range.start.line) * 10_000 + (range.end.character - range.start.character) : Number.MAX_SAFE_INTEGER;
}

/** Targets whose lens (or action) covers `position`, innermost first; run ids come from result lenses. */
export function targetsFrom(lenses: CodeLens[], actions: (CodeAction | Command)[], position: Position): LocatedTarget[] {
  const byId = new Map<string, LocatedTarget>();
  const add = (command: Command | undefined, range: Range | undefined) => {
    if (!command || !Object.values(ServerCommands).includes(command.command as never)) {
      return;
    }
    const ref = targetFromArguments(command.command, command.arguments);
    if (!ref) {
      return;
    }
    const known = byId.get(ref.targetId) ?? { uri: ref.uri, targetId: ref.targetId, label: targetLabel(ref.targetId) };
    known.range = size(range) < size(known.range) ? range : known.range;
    known.backend = known.backend ?? ref.backend;
    known.runId = known.runId ?? ref.runId;
    byId.set(ref.targetId, known);
  };
  for (const lens of lenses) {
    if (contains(lens.range, position) || lens.range.start.line === position.line) {
      add(lens.command, lens.range);
    }
  }
  for (const item of actions) {
    const action = item as CodeAction;
    if (typeof (item as Command).command === 'string') {
      add(item as Command, undefined);
    } else if (action.kind?.startsWith(ActionKinds.optimize) || action.kind?.startsWith(ActionKinds.apply)) {
      add(action.command, undefined);
    }
  }
  return [...byId.values()].sort((a, b) => size(a.range) - size(b.range));
}

