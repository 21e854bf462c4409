import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { useDisclosure } from '../../app/disclosure.ts';
import { useNotices } from '../../app/notices.tsx';
import { Loading, Page } from '../../app/Page.tsx';
import { FormError } from '../../forms/Field.tsx';
import { paths } from '../../paths.ts';
import { BranchDialog } from './BranchDialog.tsx';
import { Executions } from './Executions.tsx';
import { Graph } from './Graph.tsx';
import { Palette } from './Palette.tsx';
import { StepPanel, type Draft } from './StepPanel.tsx';
import { branchesOf } from './steps.ts';
import type { Execution, Step, WorkflowWithSteps } from './types.ts';
import { useWorkflowActions } from './useWorkflowActions.ts';
import { WorkflowSettings } from './WorkflowSettings.tsx';

/** One workflow: its settings, the graph editor with the palette and side panel, its executions. */
export function WorkflowEditor() {
  const project = useCurrentProject();
  const { workflowId = '' } = useParams();
  const workflow = useQuery({
    queryKey: ['workflow', project.id, workflowId],
    queryFn: () => api<WorkflowWithSteps>(`/workflows/${encodeURIComponent(workflowId)}`, { projectId: project.id }),
  });
  if (workflow.isPending) return <Page title="Workflow"><Loading what="Loading the workflow" /></Page>;
  if (workflow.error) return <Page title="Workflow"><p role="alert">{errorMessage(workflow.error)}</p></Page>;
  return <Editor workflow={workflow.data} />;
}

function Editor({ workflow }: { workflow: WorkflowWithSteps }) {
  const project = useCurrentProject();
  const actions = useWorkflowActions(project.id, workflow.id);
  const [selected, setSelected] = useState<string>();
  const [draft, setDraft] = useState<Draft>();
  const [pending, setPending] = useState<{ from: string; to: string }>();
  const [shown, setShown] = useState<Execution>();
  // A save that finishes after the user moved on (another step or palette choice) must not close what they opened since.
  const current = useRef<Draft | string | undefined>(undefined);
  current.current = draft ?? selected;
  const opened = draft ?? selected;
  const done = (id?: string) => {
    if (current.current !== opened) return;
    setDraft(undefined);
    setSelected(id);
  };
  const { say } = useNotices();
  const stepOf = (id?: string) => workflow.steps.find((s) => s.id === id);
  const selectedStep = stepOf(selected);

  function addFromPalette(type: Draft['type']) {
    const anchor = selectedStep ?? workflow.steps.reduce((low, s) => (s.position.y > low.position.y ? s : low), workflow.steps[0]);
    const below = Math.max(...workflow.steps.map((s) => s.position.y)) + 140;
    setDraft({ type, position: { x: anchor?.position.x ?? 0, y: below }, fromStepId: anchor?.id });
    setSelected(undefined);
  }

  function connect(from: string, to: string, branch?: string) {
    setPending(undefined);
    actions.connect.mutate(
      { fromStepId: from, toStepId: to, condition: branch ? { branch } : null },
      { onSuccess: () => say(`Connected ${stepOf(from)?.name} to ${stepOf(to)?.name}`) },
    );
  }

  return (
    <Page title={`Workflow ${workflow.name}`} actions={<DeleteWorkflow workflow={workflow} />}>
      <WorkflowSettings workflow={workflow} actions={actions} />
      <section className="card" aria-labelledby="graph-title">
        <h2 id="graph-title">Steps</h2>
        <p className="hint">
          Add a step from the palette, drag from the bottom handle of a step to the top of the next to connect them, click a step to edit it. With the
          keyboard: Tab to a step, arrows move it, Enter selects it; connect in the side panel.
        </p>
        <Palette onAdd={addFromPalette} />
        <FormError message={actions.connect.error ? errorMessage(actions.connect.error) : actions.disconnect.error ? errorMessage(actions.disconnect.error) : undefined} />
        {pending && stepOf(pending.from) && stepOf(pending.to) && (
          <BranchDialog from={stepOf(pending.from)!} to={stepOf(pending.to)!} onChoose={(b) => connect(pending.from, pending.to, b)} onCancel={() => setPending(undefined)} />
        )}
        <div className="editor-layout">
          <Graph
            steps={workflow.steps}
            transitions={workflow.transitions}
            selectedStepId={selected}
            path={shown?.path}
            onSelect={(id) => (setSelected(id), setDraft(undefined))}
            onMove={(stepId, position) => actions.saveStep.mutate({ stepId, body: { position } })}
            onConnect={(from, to) => (branchesOf(stepOf(from)!.type).length > 0 ? setPending({ from, to }) : connect(from, to))}
            onDeleteTransitions={(ids) => ids.forEach((id) => actions.disconnect.mutate(id))}
            onDeleteSteps={(ids) => ids.forEach((id) => actions.deleteStep.mutate(id))}
          />
          {(draft || selectedStep) && (
            <StepPanel
              key={draft ? `draft-${draft.type}-${draft.fromStepId}` : panelKey(selectedStep!)}
              projectId={project.id}
              steps={workflow.steps}
              transitions={workflow.transitions}
              actions={actions}
              step={draft ? undefined : selectedStep}
              draft={draft}
              onDone={done}
            />
          )}
        </div>
      </section>
      <Executions projectId={project.id} workflowId={workflow.id} steps={workflow.steps} shown={shown?.id} onShow={setShown} />
    </Page>
  );
}

/**
 * The side panel is made again (its form read afresh, the focus on its heading) when what it shows
 * changes: another step, or this one's name or config saved. Not when only the step's position
 * changes: a step moved on the graph (dragged, or with the arrow keys) keeps the focus there, where
 * a refetch after each saved move would otherwise take it to the panel between key presses.
 */
const panelKey = (step: Step) => `${step.id}:${JSON.stringify([step.name, step.config])}`;

function DeleteWorkflow({ workflow }: { workflow: WorkflowWithSteps }) {
  const project = useCurrentProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const confirming = useDisclosure();
  const remove = useMutation({
    mutationFn: () => api(`/workflows/${encodeURIComponent(workflow.id)}`, { method: 'DELETE', projectId: project.id }),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ['workflows', project.id] });
      navigate(paths.screen(project.id, 'workflows'));
    },
  });
  if (!confirming.open)
    return (
      <button type="button" ref={confirming.opener(true)} onClick={() => confirming.show(true)}>
        Delete workflow
      </button>
    );
  return (
    <div className="confirm" role="group" aria-label="Confirm deleting the workflow" {...confirming.dismissable}>
      {remove.error && <span role="alert">{errorMessage(remove.error)} </span>}
      Running executions are cancelled.{' '}
      <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending} autoFocus>
        Delete now
      </button>{' '}
      <button type="button" onClick={confirming.close}>
        Keep it
      </button>
    </div>
  );
}
