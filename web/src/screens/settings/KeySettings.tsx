import { useMutation } from '@tanstack/react-query';
import { api, errorMessage } from '../../api/client.ts';
import type { IssuedKeys as Keys } from '../../api/projects.ts';
import { useDisclosure } from '../../app/disclosure.ts';
import { FormError } from '../../forms/Field.tsx';
import { IssuedKeys } from '../projects/IssuedKeys.tsx';

/** Rotating the keys (admin): asked twice, since the current keys stop working at once; the new ones are shown once. */
export function KeySettings({ projectId }: { projectId: string }) {
  const confirming = useDisclosure();
  const rotate = useMutation({
    mutationFn: () => api<Keys>(`/projects/${encodeURIComponent(projectId)}/keys/rotate`, { method: 'POST' }),
    onSettled: confirming.close,
  });
  return (
    <section aria-labelledby="keys-title" className="card">
      <h2 id="keys-title">API keys</h2>
      <p>
        Keys are shown once, when they are issued; only their fingerprints are stored. If a key is lost or leaked, rotate
        them: new keys are issued and the current ones stop working at once.
      </p>
      <FormError message={rotate.error ? errorMessage(rotate.error) : undefined} />
      {rotate.data && <IssuedKeys keys={rotate.data} />}
      {confirming.open ? (
        <div className="confirm" role="group" aria-label="Confirm key rotation" {...confirming.dismissable}>
          <p>The current secret and public keys stop working at once. Rotate them?</p>
          <button type="button" className="danger" onClick={() => rotate.mutate()} disabled={rotate.isPending} autoFocus>
            {rotate.isPending ? 'Rotating…' : 'Rotate now'}
          </button>{' '}
          <button type="button" onClick={confirming.close}>
            Cancel
          </button>
        </div>
      ) : (
        <button type="button" ref={confirming.opener(true)} onClick={() => confirming.show(true)}>
          Rotate keys
        </button>
      )}
    </section>
  );
}
