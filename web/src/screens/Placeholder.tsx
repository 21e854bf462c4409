import { Page } from '../app/Page.tsx';

/** A navigation entry whose screen is not built yet. */
export function Placeholder({ title }: { title: string }) {
  return (
    <Page title={title}>
      <p className="empty">This screen is not built yet. Everything it will show is available through the API (see /docs).</p>
    </Page>
  );
}
