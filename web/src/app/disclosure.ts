import { useCallback, useEffect, useRef, useState, type KeyboardEvent } from 'react';

/**
 * An inline dialog: a form or a confirmation that a button opens in place (New contact, Rotate
 * keys, Delete…). Escape inside it closes it, and closing it (Escape, Cancel, or done) gives the
 * focus back to the button that opened it (WCAG 2.4.3): that button was replaced while the dialog
 * was open, so without this the focus would fall to the page's start. `open` is what is open (a
 * screen with several such buttons names each; `true` for one).
 */
export function useDisclosure<T extends string | boolean = true>() {
  const [open, setOpen] = useState<T | null>(null);
  const openers = useRef(new Map<string, HTMLElement>());
  const last = useRef<T | null>(null);
  useEffect(() => {
    if (open === null && last.current !== null) openers.current.get(String(last.current))?.focus();
    last.current = open;
  }, [open]);
  const close = useCallback(() => setOpen(null), []);
  return {
    open,
    show: (what: T) => setOpen(what),
    close,
    /** The ref of the button that opens `what`. */
    opener: (what: T) => (element: HTMLElement | null) => {
      if (element) openers.current.set(String(what), element);
      else openers.current.delete(String(what));
    },
    /** Spread on the dialog's container: Escape closes it. */
    dismissable: {
      onKeyDown: (event: KeyboardEvent) => {
        if (event.key !== 'Escape') return;
        event.preventDefault();
        event.stopPropagation();
        setOpen(null);
      },
    },
  };
}
