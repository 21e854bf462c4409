import { BRANCH_LABELS, branchesOf } from './steps.ts';
import type { Step } from './types.ts';

/** After a drag out of a CONDITION or WAIT_FOR_EVENT step: which branch does this edge carry? Escape cancels, as Cancel does. */
export function BranchDialog({ from, to, onChoose, onCancel }: { from: Step; to: Step; onChoose: (branch: string) => void; onCancel: () => void }) {
  return (
    <div className="card branch-dialog" role="dialog" aria-modal="false" aria-labelledby="branch-dialog-title" onKeyDown={(e) => e.key === 'Escape' && onCancel()}>
      <h2 id="branch-dialog-title">
        Which branch of {from.name} leads to {to.name}?
      </h2>
      {branchesOf(from.type).map((b, i) => (
        <button key={b} type="button" className="primary" onClick={() => onChoose(b)} autoFocus={i === 0}>
          On {BRANCH_LABELS[b]}
        </button>
      ))}{' '}
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
    </div>
  );
}
