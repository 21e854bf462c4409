/**
 * Runs `sweep` every `periodMs`, never two at once (one still running when the next is due skips
 * that turn), with the timer keeping no process alive. A failure goes to `onError`; the next turn
 * tries again. Returns the stop.
 */
export function startPeriodic(periodMs: number, sweep: () => Promise<void>, onError: (err: unknown) => void): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweep()
      .catch(onError)
      .finally(() => {
        running = false;
      });
  }, periodMs);
  timer.unref();
  return () => clearInterval(timer);
}
