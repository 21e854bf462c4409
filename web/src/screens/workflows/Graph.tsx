import {
  applyNodeChanges,
  Background,
  Controls,
  MarkerType,
  ReactFlow,
  type Connection,
  type Edge,
  type Node,
  type NodeChange,
  useReactFlow,
} from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { useEffect, useMemo, useRef, useState } from 'react';
import { BRANCH_LABELS, branchesOf, STEP_LABELS } from './steps.ts';
import type { Step, Transition } from './types.ts';

interface Props {
  steps: Step[];
  transitions: Transition[];
  selectedStepId?: string;
  /** The path of the execution being shown: its steps and the transitions between them are highlighted. */
  path?: string[];
  onSelect: (stepId: string) => void;
  onMove: (stepId: string, position: { x: number; y: number }) => void;
  /** A drag from one step's handle to another's; the screen asks for the branch when one is needed. */
  onConnect: (fromStepId: string, toStepId: string) => void;
  onDeleteTransitions: (ids: string[]) => void;
  onDeleteSteps: (ids: string[]) => void;
}

const nodeType = (step: Step) => (step.type === 'TRIGGER' ? 'input' : step.type === 'EXIT' ? 'output' : 'default');

/**
 * The workflow as a graph (@xyflow/react): a node per step at its saved position, an edge per
 * transition labelled with its branch. Nodes are dragged (the position is saved on drop) or moved
 * with the arrow keys once focused; Delete removes a selected step or edge.
 */
export function Graph({ steps, transitions, selectedStepId, path, onSelect, onMove, onConnect, onDeleteTransitions, onDeleteSteps }: Props) {
  const onPath = useMemo(() => new Set(path ?? []), [path]);
  const pathEdges = useMemo(() => {
    const pairs = new Set<string>();
    for (let i = 1; i < (path ?? []).length; i++) pairs.add(`${path![i - 1]}>${path![i]}`);
    return pairs;
  }, [path]);

  const fromSteps = useMemo(
    (): Node[] =>
      steps.map((s) => ({
        id: s.id,
        type: nodeType(s),
        position: s.position,
        data: { label: <StepLabel step={s} /> },
        ariaLabel: `${STEP_LABELS[s.type].label} step ${s.name}${onPath.has(s.id) ? ', on the path' : ''}`,
        className: [`step-${s.type.toLowerCase()}`, onPath.has(s.id) ? 'on-path' : ''].join(' '),
        selected: s.id === selectedStepId,
        deletable: s.type !== 'TRIGGER',
      })),
    [steps, selectedStepId, onPath],
  );
  // Local copy so a drag moves smoothly.
  const [nodes, setNodes] = useState<Node[]>(fromSteps);
  // A position is saved once the step has settled: at the end of a drag, or after a burst of
  // arrow-key moves (each press moves it 5 px), not on every intermediate position.
  const pendingMoves = useRef(new Map<string, ReturnType<typeof setTimeout>>());
  useEffect(() => () => pendingMoves.current.forEach(clearTimeout), []);
  function settle(id: string, position: { x: number; y: number }) {
    clearTimeout(pendingMoves.current.get(id));
    pendingMoves.current.set(
      id,
      setTimeout(() => {
        pendingMoves.current.delete(id);
        onMove(id, { x: Math.round(position.x), y: Math.round(position.y) });
      }, 400),
    );
  }
  // A fresh read of the workflow replaces the nodes, except where a move is still to be saved.
  useEffect(
    () => setNodes((current) => fromSteps.map((n) => (pendingMoves.current.has(n.id) ? { ...n, position: current.find((c) => c.id === n.id)?.position ?? n.position } : n))),
    [fromSteps],
  );

  const edges = useMemo(
    (): Edge[] =>
      transitions.map((t) => {
        const highlighted = pathEdges.has(`${t.fromStepId}>${t.toStepId}`);
        return {
          id: t.id,
          source: t.fromStepId,
          target: t.toStepId,
          label: t.condition?.branch ? BRANCH_LABELS[t.condition.branch] : undefined,
          ariaLabel: `From ${nameOf(steps, t.fromStepId)} to ${nameOf(steps, t.toStepId)}${t.condition?.branch ? ` on ${t.condition.branch}` : ''}`,
          className: highlighted ? 'on-path' : undefined,
          animated: highlighted,
          markerEnd: { type: MarkerType.ArrowClosed },
        };
      }),
    [transitions, steps, pathEdges],
  );

  return (
    <div className="graph" role="group" aria-label="Workflow graph: steps and their connections">
      <ReactFlow
        nodes={nodes}
        edges={edges}
        onNodesChange={(changes: NodeChange[]) => {
          setNodes((current) => applyNodeChanges(changes.filter((c) => c.type !== 'remove'), current));
          for (const c of changes) if (c.type === 'position' && !c.dragging && c.position) settle(c.id, c.position);
          // Enter or Space on a focused step selects it, as a click does: the side panel opens. Only
          // for the step that has focus: a selection the graph makes by itself opens nothing.
          const picked = changes.find((c) => c.type === 'select' && c.selected);
          const focused = document.activeElement?.closest('.react-flow__node')?.getAttribute('data-id');
          if (picked && 'id' in picked && picked.id === focused && picked.id !== selectedStepId) onSelect(picked.id);
        }}
        onNodeClick={(_, node) => onSelect(node.id)}
        onConnect={(c: Connection) => c.source && c.target && onConnect(c.source, c.target)}
        onEdgesDelete={(deleted) => onDeleteTransitions(deleted.map((e) => e.id))}
        onNodesDelete={(deleted) => onDeleteSteps(deleted.map((n) => n.id))}
        fitView
        fitViewOptions={{ padding: 0.2, maxZoom: 1 }}
        proOptions={{ hideAttribution: true }}
        deleteKeyCode={['Delete', 'Backspace']}
      >
        <FitWhenStepsChange count={steps.length} />
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}

/** A step added or removed brings the whole graph back into view (a new step lands below the others). */
function FitWhenStepsChange({ count }: { count: number }) {
  const { fitView } = useReactFlow();
  useEffect(() => {
    const frame = requestAnimationFrame(() => void fitView({ padding: 0.2, maxZoom: 1 }));
    return () => cancelAnimationFrame(frame);
  }, [count, fitView]);
  return null;
}

const nameOf = (steps: Step[], id: string) => steps.find((s) => s.id === id)?.name ?? id;

function StepLabel({ step }: { step: Step }) {
  const branches = branchesOf(step.type);
  return (
    <div className="step-label">
      <span className="step-type">{STEP_LABELS[step.type].label}</span>
      <span className="step-name">{step.name}</span>
      {branches.length > 0 && <span className="hint">{branches.join(' / ')}</span>}
    </div>
  );
}
