import { useCurrentProject } from '../../api/projects.ts';
import { Page } from '../../app/Page.tsx';
import { GeneralSettings } from './GeneralSettings.tsx';
import { KeySettings } from './KeySettings.tsx';
import { MemberSettings } from './MemberSettings.tsx';

/** The project's name and language, its API keys and its members. A MEMBER sees, an ADMIN changes. */
export default function Settings() {
  const project = useCurrentProject();
  const admin = project.role === 'ADMIN';
  return (
    <Page title="Settings">
      {!admin && <p className="notice">You are a member of this project: only its admins change its settings, keys and members.</p>}
      <GeneralSettings project={project} admin={admin} />
      {admin && <KeySettings projectId={project.id} />}
      <MemberSettings projectId={project.id} admin={admin} />
    </Page>
  );
}
