/**
 * Previous and next page of a list paged by cursor (the API answers where the next page starts,
 * never how many pages there are): `useCursorPages` keeps the cursors of the pages before.
 */
import { useState } from 'react';

export function useCursorPages() {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  return {
    /** Where the page on view starts (undefined: the first page). */
    cursor: cursors[cursors.length - 1],
    number: cursors.length,
    back: () => setCursors((c) => (c.length > 1 ? c.slice(0, -1) : c)),
    next: (cursor: string) => setCursors((c) => [...c, cursor]),
  };
}

export function CursorPager({ pages, nextCursor, label }: { pages: ReturnType<typeof useCursorPages>; nextCursor: string | null | undefined; label: string }) {
  return (
    <nav className="pager" aria-label={label}>
      <span>Page {pages.number}</span>
      <button type="button" disabled={pages.number === 1} onClick={pages.back}>
        Previous page
      </button>
      <button type="button" disabled={!nextCursor} onClick={() => nextCursor && pages.next(nextCursor)}>
        Next page
      </button>
    </nav>
  );
}
