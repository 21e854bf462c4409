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

it('a second signal while closing exits 1 at once; a failed close exits 1', async () => {
  const hung = harness(() => new Promise<void>(() => undefined), 60_000);
  hung.signals.emit('SIGINT');
  hung.signals.emit('SIGINT');
  expect(hung.exits).toEqual([1]);

  const failing = harness(() => Promise.reject(new Error('store gone')));
  failing.signals.emit('SIGTERM');
  await expect.poll(() => failing.exits).toEqual([1]);
});
