import { useState } from 'react';
import { useNotices } from '../../app/notices.tsx';

/** Copies `value` to the clipboard; the status line says so (the value also sits in a selectable field). */
export function CopyButton({ value, what }: { value: string; what: string }) {
  const { say } = useNotices();
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      aria-label={`Copy ${what}`}
      onClick={async () => {
        await navigator.clipboard?.writeText(value).catch(() => {});
        setCopied(true);
        say(`${what} copied`);
      }}
    >
      {copied ? 'Copied' : 'Copy'}
    </button>
  );
}
