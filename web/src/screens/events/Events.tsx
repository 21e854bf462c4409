import './events.css';
import { useSearchParams } from 'react-router';
import { useCurrentProject } from '../../api/projects.ts';
import { Page } from '../../app/Page.tsx';
import { EventExplorer } from './EventExplorer.tsx';
import { EventNames } from './EventNames.tsx';
import { EventStatsChart } from './EventStatsChart.tsx';

/** Events: every name with its count, an explorer by name and contact, counts over a range. */
export default function Events() {
  const project = useCurrentProject();
  const [, setParams] = useSearchParams();
  return (
    <Page title="Events">
      <EventNames
        projectId={project.id}
        onPick={(name) => {
          setParams({ name });
          // The explorer now shows that name: take the user there.
          document.getElementById('explorer-title')?.focus();
        }}
      />
      <EventExplorer />
      <EventStatsChart projectId={project.id} />
    </Page>
  );
}
