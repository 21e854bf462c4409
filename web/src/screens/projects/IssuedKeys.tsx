import { useState } from 'react';
import type { IssuedKeys as Keys } from '../../api/projects.ts';
import { useNotices } from '../../app/notices.tsx';

/**
 * Keys as the API issues them: shown this once (only their hashes are kept), each with a copy
 * button. They live in this component's state only and are gone when the user leaves.
 */
export function IssuedKeys({ keys }: { keys: Keys }) {
  return (
    <div className="issued-keys" role="region" aria-label="Your new API keys">
      <p className="notice">
        <strong>Copy these keys now: they are shown only this once.</strong> The secret key belongs in your server's
        configuration, never in a web page or an app.
      </p>
      <KeyRow label="Secret key" value={keys.secretKey} />
      <KeyRow label="Public key (for POST /v1/track from browsers)" value={keys.publicKey} />
    </div>
  );
}

function KeyRow({ label, value }: { label: string; value: string }) {
  const { say } = useNotices();
  const [copied, setCopied] = useState(false);
  const id = `key-${label.split(' ')[0].toLowerCase()}`;
  return (
    <div className="key-row">
      <label htmlFor={id}>{label}</label>
      <input id={id} readOnly value={value} onFocus={(e) => e.currentTarget.select()} className="mono" />
      <button
        type="button"
        onClick={async () => {
          await navigator.clipboard?.writeText(value).catch(() => {});
          setCopied(true);
          say(`${label} copied`);
        }}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}
