import { useCurrentProject } from '../../api/projects.ts';
import { Page } from '../../app/Page.tsx';

export default function Overview() {
  const project = useCurrentProject();
  return (
    <Page title="Overview">
      <p>{project.name}</p>
    </Page>
  );
}
