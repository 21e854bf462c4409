import { useEffect, useRef, type ReactNode } from 'react';

/**
 * The frame of every screen: its heading and the document's title. The heading takes focus
 * when the page appears, so after a route change keyboard and screen-reader users start at the
 * new page's top (not on the link they followed).
 */
export function Page({ title, actions, children }: { title: string; actions?: ReactNode; children: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · mailroom`;
    heading.current?.focus();
  }, [title]);
  return (
    <section className="page" aria-labelledby="page-title">
      <header className="page-header">
        <h1 id="page-title" ref={heading} tabIndex={-1}>
          {title}
        </h1>
        {actions}
      </header>
      {children}
    </section>
  );
}

/** Loading, for a Suspense fallback or a query under way. */
export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p className="loading" role="status">
      {what}…
    </p>
  );
}
