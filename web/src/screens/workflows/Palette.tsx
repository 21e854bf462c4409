import { ADDABLE_STEP_TYPES } from '../../../../domain/workflows/schema.ts';
import { STEP_LABELS } from './steps.ts';
import type { Draft } from './StepPanel.tsx';

/** Every step type a workflow can have; choosing one opens its form in the side panel. */
export function Palette({ onAdd }: { onAdd: (type: Draft['type']) => void }) {
  return (
    <div className="palette" role="group" aria-label="Add a step">
      {ADDABLE_STEP_TYPES.map((type) => (
        <button key={type} type="button" title={STEP_LABELS[type].does} onClick={() => onAdd(type as Draft['type'])}>
          + {STEP_LABELS[type].label}
        </button>
      ))}
    </div>
  );
}
