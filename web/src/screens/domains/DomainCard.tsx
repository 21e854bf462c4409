import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, errorMessage } from '../../api/client.ts';
import { useDisclosure } from '../../app/disclosure.ts';
import { useNotices } from '../../app/notices.tsx';
import { FormError } from '../../forms/Field.tsx';
import { CopyButton } from './CopyButton.tsx';
import type { Domain, VerifyResult } from './types.ts';

/**
 * One domain: the records to publish (each with copy buttons and, once checked, whether DNS has
 * it), verify, and remove (admin). The check result lives in this card: every press looks again.
 */
export function DomainCard({ domain, admin }: { domain: Domain; admin: boolean }) {
  const queryClient = useQueryClient();
  const { say } = useNotices();
  const confirming = useDisclosure();
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['domains', domain.projectId] });
  const verify = useMutation({
    mutationFn: () => api<VerifyResult>(`/domains/${encodeURIComponent(domain.id)}/verify`),
    onSuccess: (result) => {
      say(result.verified ? `${domain.domain} is verified` : `${domain.domain} is not verified yet: some required records are missing`);
      return refresh();
    },
  });
  const remove = useMutation({
    mutationFn: () => api(`/domains/${encodeURIComponent(domain.id)}`, { method: 'DELETE' }),
    onSuccess: () => {
      say(`${domain.domain} removed`);
      return refresh();
    },
  });
  const found = (i: number) => verify.data?.records[i]?.found;
  const titleId = `domain-${domain.id}`;

  return (
    <section className="card" aria-labelledby={titleId}>
      <header className="page-header">
        <h2 id={titleId}>{domain.domain}</h2>
        <span className={domain.verified ? 'badge ok' : 'badge'}>{domain.verified ? 'Verified' : 'Not verified'}</span>
      </header>
      <p className="hint">
        {domain.verified
          ? `Verified ${new Date(domain.verifiedAt!).toLocaleString()}: mail from addresses @${domain.domain} can be sent.`
          : 'Publish the required records at your DNS provider, then press Verify. DNS changes can take a while to show.'}
      </p>
      <table>
        <caption className="visually-hidden">DNS records for {domain.domain}</caption>
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col">Name</th>
            <th scope="col">Value</th>
            <th scope="col">Needed</th>
            <th scope="col">Check</th>
          </tr>
        </thead>
        <tbody>
          {domain.records.map((r, i) => (
            <tr key={`${r.type}-${r.name}-${i}`}>
              <td>{r.type}</td>
              <td>
                <span className="mono record-value">{r.name}</span> <CopyButton value={r.name} what={`${r.type} name ${r.name}`} />
              </td>
              <td>
                <span className="mono record-value">{r.value}</span> <CopyButton value={r.value} what={`${r.type} value for ${r.name}`} />
              </td>
              <td>{r.required ? 'Required' : 'Recommended'}</td>
              <td>{found(i) === undefined ? <span className="hint">Not checked</span> : found(i) ? <span className="ok">Found</span> : <span className="missing">Missing</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <FormError message={verify.error ? errorMessage(verify.error) : remove.error ? errorMessage(remove.error) : undefined} />
      <button type="button" className="primary" onClick={() => verify.mutate()} disabled={verify.isPending}>
        {verify.isPending ? 'Checking DNS…' : `Verify ${domain.domain}`}
      </button>{' '}
      {admin &&
        (confirming.open ? (
          <span className="confirm" role="group" aria-label={`Confirm removing ${domain.domain}`} {...confirming.dismissable}>
            Sending from {domain.domain} stops at once.{' '}
            <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending} autoFocus>
              Remove now
            </button>{' '}
            <button type="button" onClick={confirming.close}>
              Keep it
            </button>
          </span>
        ) : (
          <button type="button" ref={confirming.opener(true)} onClick={() => confirming.show(true)}>
            Remove {domain.domain}
          </button>
        ))}
    </section>
  );
}
