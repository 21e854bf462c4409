import './pager.css';

/** Previous and next page, and where we are. */
export function Pager({ page, totalPages, total, onPage, noun }: { page: number; totalPages: number; total: number; onPage: (p: number) => void; noun: string }) {
  return (
    <nav className="pager" aria-label={`Pages of ${noun}`}>
      <button type="button" onClick={() => onPage(page - 1)} disabled={page <= 1}>
        Previous page
      </button>
      <span>
        Page {page} of {Math.max(totalPages, 1)} ({total.toLocaleString()} {noun})
      </span>
      <button type="button" onClick={() => onPage(page + 1)} disabled={page >= totalPages}>
        Next page
      </button>
    </nav>
  );
}
