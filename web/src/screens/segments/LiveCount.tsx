/** The live count beside a condition being edited, announced politely as it changes. */
export function LiveCount({ count, pending, incomplete, noun }: { count?: number; pending: boolean; incomplete: boolean; noun: (n: number) => string }) {
  let text: string;
  if (incomplete) text = 'Complete the filters to see the count.';
  else if (count === undefined) text = 'Counting…';
  else text = `${noun(count)}${pending ? ' (updating…)' : ''}`;
  return (
    <p className="live-count" role="status" aria-live="polite" aria-busy={pending}>
      {text}
    </p>
  );
}

export const contactsNoun = (n: number) => `${n.toLocaleString()} ${n === 1 ? 'contact matches' : 'contacts match'}`;
