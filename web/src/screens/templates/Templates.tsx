import { Route, Routes } from 'react-router';
import './templates.css';
import { TemplateEditor } from './TemplateEditor.tsx';
import { TemplateList } from './TemplateList.tsx';

/** /templates: the list; /templates/new and /templates/:id: the editor beside its live preview. */
export default function Templates() {
  return (
    <Routes>
      <Route index element={<TemplateList />} />
      <Route path="new" element={<TemplateEditor />} />
      <Route path=":templateId" element={<TemplateEditor />} />
    </Routes>
  );
}
