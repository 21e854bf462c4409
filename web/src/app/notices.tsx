import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import { setApiListeners } from '../api/client.ts';
import { useSession } from '../api/session.tsx';

interface Notices {
  /** A short message for the status line (saved, copied, …). */
  say(message: string): void;
}

const NoticeContext = createContext<Notices>({ say: () => {} });

/**
 * What the API client reports for every screen: a 401 signs the session out (the route guard
 * then shows sign-in), a 429 shows how long to wait, counting down. Plus a polite status line.
 */
export function NoticeProvider({ children }: { children: ReactNode }) {
  const { expire } = useSession();
  const [waitUntil, setWaitUntil] = useState<number | null>(null);
  const [now, setNow] = useState(() => Date.now());
  const [status, setStatus] = useState('');

  useEffect(() => {
    setApiListeners({ onUnauthorized: expire, onRateLimited: (seconds) => setWaitUntil(Date.now() + seconds * 1000) });
  }, [expire]);

  useEffect(() => {
    if (waitUntil === null) return;
    const timer = setInterval(() => {
      setNow(Date.now());
      if (Date.now() >= waitUntil) setWaitUntil(null);
    }, 1000);
    return () => clearInterval(timer);
  }, [waitUntil]);

  const seconds = waitUntil === null ? 0 : Math.max(1, Math.ceil((waitUntil - now) / 1000));
  return (
    <NoticeContext.Provider value={{ say: setStatus }}>
      {waitUntil !== null && (
        <div className="notice notice-wait" role="alert">
          Too many requests: the server asks to wait. Try again in {seconds} s.
        </div>
      )}
      <div className="visually-hidden" role="status" aria-live="polite">
        {status}
      </div>
      {children}
    </NoticeContext.Provider>
  );
}

export const useNotices = () => useContext(NoticeContext);
