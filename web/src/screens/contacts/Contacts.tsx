import './contacts.css';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Route, Routes, useNavigate, useParams } from 'react-router';
import { api } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { useDisclosure } from '../../app/disclosure.ts';
import { useNotices } from '../../app/notices.tsx';
import { Page } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';
import { ContactDetails } from './ContactDetails.tsx';
import { ContactForm, type ContactInput } from './ContactForm.tsx';
import { ContactList } from './ContactList.tsx';
import { ImportContacts } from './ImportContacts.tsx';
import { contactKeys, type Contact } from './types.ts';

/** Contacts: the table (search, filter, paging, bulk actions), create, CSV import; /contacts/:id is one contact. */
export default function Contacts() {
  return (
    <Routes>
      <Route index element={<ContactsHome />} />
      <Route path=":contactId" element={<ContactRoute />} />
    </Routes>
  );
}

function ContactRoute() {
  const { contactId = '' } = useParams();
  return <ContactDetails key={contactId} contactId={contactId} />;
}

function ContactsHome() {
  const project = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const { say } = useNotices();
  const creating = useDisclosure();
  const create = useMutation({
    mutationFn: (body: ContactInput) => api<Contact & { _meta: { isNew: boolean } }>('/contacts', { method: 'POST', body, projectId: project.id }),
    onSuccess: (contact) => {
      say(contact._meta.isNew ? `${contact.email} created` : `${contact.email} existed and was updated`);
      void queryClient.invalidateQueries({ queryKey: contactKeys.all(project.id) });
      navigate(paths.screen(project.id, 'contacts', `/${encodeURIComponent(contact.id)}`));
    },
  });
  return (
    <Page
      title="Contacts"
      actions={
        !creating.open && (
          <button type="button" className="primary" ref={creating.opener(true)} onClick={() => creating.show(true)}>
            New contact
          </button>
        )
      }
    >
      {creating.open && (
        <section aria-labelledby="new-contact-title" className="card" {...creating.dismissable}>
          <h2 id="new-contact-title">New contact</h2>
          <ContactForm submitLabel="Create contact" pending={create.isPending} error={create.error} onSubmit={(input) => create.mutate(input)} onCancel={creating.close} />
        </section>
      )}
      <ContactList />
      <ImportContacts />
    </Page>
  );
}
