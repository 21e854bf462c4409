import { Route, Routes } from 'react-router';
import './workflows.css';
import { WorkflowEditor } from './WorkflowEditor.tsx';
import { WorkflowList } from './WorkflowList.tsx';

/** /workflows: the list and a new workflow; /workflows/:id: the editor and its executions. */
export default function Workflows() {
  return (
    <Routes>
      <Route index element={<WorkflowList />} />
      <Route path=":workflowId" element={<WorkflowEditor />} />
    </Routes>
  );
}
