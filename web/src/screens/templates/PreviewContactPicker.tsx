import { useQuery } from '@tanstack/react-query';
import { useDeferredValue, useId, useState } from 'react';
import { api, errorMessage } from '../../api/client.ts';
import type { PreviewContact } from './Preview.tsx';

/** Finds a contact by email (GET /contacts?search=) whose data the preview renders with. */
export function PreviewContactPicker({ projectId, onChoose }: { projectId: string; onChoose: (contact: PreviewContact | null) => void }) {
  const [search, setSearch] = useState('');
  const deferred = useDeferredValue(search.trim());
  const searchId = useId();
  const pickId = useId();
  const found = useQuery({
    queryKey: ['contacts', projectId, 'search', deferred],
    queryFn: () => api<{ contacts: PreviewContact[] }>('/contacts', { projectId, query: { search: deferred, limit: 20 } }),
  });
  const contacts = found.data?.contacts ?? [];
  return (
    <div className="columns">
      <div className="field">
        <label htmlFor={searchId}>Find a contact by email</label>
        <input id={searchId} type="search" value={search} onChange={(e) => setSearch(e.target.value)} maxLength={254} />
      </div>
      <div className="field">
        <label htmlFor={pickId}>Preview with contact</label>
        <select id={pickId} defaultValue="" onChange={(e) => onChoose(contacts.find((c) => c.id === e.target.value) ?? null)}>
          <option value="">No contact (fallbacks)</option>
          {contacts.map((c) => (
            <option key={c.id} value={c.id}>
              {c.email}
            </option>
          ))}
        </select>
        {found.error && <p className="field-error" role="alert">{errorMessage(found.error)}</p>}
      </div>
    </div>
  );
}
