import { EventEmitter } from 'node:events';
import { expect, it } from 'vitest';
import { closeOnSignals } from '../../runtime/main.ts';

const silent = { info: () => undefined, error: () => undefined };

function harness(close: () => Promise<void>, deadlineMs = 50) {
  const signals = new EventEmitter();
  const exits: number[] = [];
  closeOnSignals(close, silent, { deadlineMs, on: (signal, listener) => void signals.on(signal, listener), exit: (code) => void exits.push(code) });
  return { signals, exits };
}

it('a signal closes the process, then exits 0', async () => {
  let closed = false;
  const { signals, exits } = harness(async () => void (closed = true));
  signals.emit('SIGTERM');
  await expect.poll(() => exits).toEqual([0]);
  expect(closed).toBe(true);
});

// An app whose Dapr sidecar was gone never finished closing and ignored SIGTERM.
it('a close that never finishes is given up after the deadline: exit 1', async () => {
  const { signals, exits } = harness(() => new Promise<void>(() => undefined));
  signals.emit('SIGTERM');
  expect(exits).toEqual([]);
  await expect.poll(() => exits, { timeout: 2_000 }).toEqual([1]);
});

it('a second signal (Ctrl-C under npm start comes twice) does not cut the close short; a failed close exits 1', async () => {
  let finish!: () => void;
  const slow = harness(() => new Promise<void>((resolve) => (finish = resolve)), 60_000);
  slow.signals.emit('SIGINT');
  slow.signals.emit('SIGINT');
  expect(slow.exits).toEqual([]);
  finish();
  await expect.poll(() => slow.exits).toEqual([0]);

  const failing = harness(() => Promise.reject(new Error('store gone')));
  failing.signals.emit('SIGTERM');
  await expect.poll(() => failing.exits).toEqual([1]);
});
