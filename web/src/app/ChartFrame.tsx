import { useEffect, useRef, type ReactNode } from 'react';

/**
 * A chart as a picture with a name (role="img"): its figures are given in text beside it (a
 * table), and nothing inside it is a Tab stop. recharts renders layers through React portals, and
 * Chromium makes an SVG element that has focus listeners (React puts them on every portal's
 * container) focusable: without this, Tab stops on several unnamed, invisible layers, hidden from
 * screen readers by role="img".
 */
export function ChartFrame({ label, children }: { label: string; children: ReactNode }) {
  const frame = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const root = frame.current!;
    const untab = () => root.querySelectorAll('svg, g').forEach((el) => el.getAttribute('tabindex') !== '-1' && el.setAttribute('tabindex', '-1'));
    untab();
    // Layers come and go with the data.
    const observer = new MutationObserver(untab);
    observer.observe(root, { childList: true, subtree: true });
    return () => observer.disconnect();
  }, []);
  return (
    <div ref={frame} className="chart" role="img" aria-label={label}>
      {children}
    </div>
  );
}
