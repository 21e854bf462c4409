// The ContactActor's rules as a pure function: plain values in, state and effects out.
import { describe, expect, it } from 'vitest';
import { decide, systemRecorded, type ContactEffect, type ContactState } from '../../actors/contact/behaviour.ts';

const T0 = '2024-01-01T00:00:00.000Z';
const NOW = new Date('2024-06-01T12:00:00.000Z');

const contact = (over: Partial<ContactState> = {}): ContactState => ({
  projectId: 'p1',
  email: 'ann@example.com',
  subscribed: true,
  data: { plan: 'pro', seats: 3 },
  createdAt: T0,
  updatedAt: T0,
  ...over,
});

const recorded = (effects: ContactEffect[]) =>
  effects.flatMap((e) => (e.kind === 'recordEvent' ? [e.event] : []));
const saved = (effects: ContactEffect[]) => effects.filter((e) => e.kind === 'saveProjection');

describe('contact data', () => {
  it('merges new keys into the existing data and overwrites changed ones', () => {
    const { state, effects } = decide(contact(), { kind: 'upsert', data: { seats: 5, city: 'Oslo' } }, NOW);
    expect(state?.data).toEqual({ plan: 'pro', seats: 5, city: 'Oslo' });
    expect(state?.updatedAt).toBe(NOW.toISOString());
    expect(state?.createdAt).toBe(T0);
    expect(saved(effects)).toEqual([{ kind: 'saveProjection', contact: state, emailChanged: false }]);
  });

  it('removes a key given as null and keeps the others', () => {
    const { state } = decide(contact(), { kind: 'patch', data: { plan: null } }, NOW);
    expect(state?.data).toEqual({ seats: 3 });
  });

  it('a null for a key the contact does not have changes nothing', () => {
    const before = contact();
    const { state, effects } = decide(before, { kind: 'patch', data: { missing: null } }, NOW);
    expect(effects).toEqual([]);
    expect(state).toEqual(before);
  });

  it('does not mutate the state it was given', () => {
    const before = contact();
    const copy = structuredClone(before);
    decide(before, { kind: 'patch', email: 'x@example.com', subscribed: false, data: { plan: null, a: 1 } }, NOW);
    expect(before).toEqual(copy);
  });

  it('keeps the value type: 1 and "1" and true are different values', () => {
    const before = contact({ data: { n: 1 } });
    expect(decide(before, { kind: 'upsert', data: { n: '1' } }, NOW).state?.data).toEqual({ n: '1' });
    expect(decide(before, { kind: 'upsert', data: { n: true } }, NOW).state?.data).toEqual({ n: true });
  });

  it('a data-only change records no event', () => {
    const { effects } = decide(contact(), { kind: 'upsert', data: { plan: 'team' } }, NOW);
    expect(recorded(effects)).toEqual([]);
    expect(saved(effects)).toHaveLength(1);
  });
});

describe('no-op commands', () => {
  it('an upsert with the same data and subscription has no effects and keeps updatedAt', () => {
    const before = contact();
    const { state, effects } = decide(before, { kind: 'upsert', subscribed: true, data: { plan: 'pro', seats: 3 } }, NOW);
    expect(effects).toEqual([]);
    expect(state).toEqual(before);
  });

  it('an empty upsert has no effects', () => {
    expect(decide(contact(), { kind: 'upsert' }, NOW).effects).toEqual([]);
  });

  it('a patch to the current email has no effects', () => {
    expect(decide(contact(), { kind: 'patch', email: 'ann@example.com' }, NOW).effects).toEqual([]);
  });

  it('setSubscribed to the current state has no effects', () => {
    expect(decide(contact({ subscribed: false }), { kind: 'setSubscribed', subscribed: false }, NOW).effects).toEqual([]);
  });
});

describe('subscription changes', () => {
  it('true → false records one contact.unsubscribed system event', () => {
    const { state, effects } = decide(contact(), { kind: 'patch', subscribed: false }, NOW);
    expect(state?.subscribed).toBe(false);
    expect(recorded(effects)).toEqual([{ name: 'contact.unsubscribed', data: {}, system: true }]);
    expect(saved(effects)).toHaveLength(1);
  });

  it('false → true records one contact.subscribed system event', () => {
    const { state, effects } = decide(contact({ subscribed: false }), { kind: 'setSubscribed', subscribed: true }, NOW);
    expect(state?.subscribed).toBe(true);
    expect(recorded(effects)).toEqual([{ name: 'contact.subscribed', data: {}, system: true }]);
  });

  it('an upsert that omits subscribed keeps the current state', () => {
    const { state, effects } = decide(contact({ subscribed: false }), { kind: 'upsert', data: { a: 1 } }, NOW);
    expect(state?.subscribed).toBe(false);
    expect(recorded(effects)).toEqual([]);
  });

  it('setSubscribed leaves the data alone', () => {
    const { state } = decide(contact(), { kind: 'setSubscribed', subscribed: false }, NOW);
    expect(state?.data).toEqual({ plan: 'pro', seats: 3 });
  });

  it('a track that changes the subscription records the tracked event and the subscription event', () => {
    const { state, effects } = decide(
      contact(),
      { kind: 'track', subscribed: false, data: { seats: 4, gone: null }, event: { id: 'e1', name: 'downgraded' } },
      NOW,
    );
    expect(state?.subscribed).toBe(false);
    expect(state?.data).toEqual({ plan: 'pro', seats: 4 });
    expect(recorded(effects)).toEqual([
      { id: 'e1', name: 'downgraded', data: { seats: 4 }, system: false },
      { name: 'contact.unsubscribed', data: {}, system: true },
    ]);
  });

  it('a track with nothing new still records its event but leaves the contact untouched', () => {
    const before = contact();
    const { state, effects } = decide(before, { kind: 'track', event: { id: 'e2', name: 'login' } }, NOW);
    expect(state).toEqual(before);
    expect(recorded(effects)).toEqual([{ id: 'e2', name: 'login', data: {}, system: false }]);
  });
});

describe('email changes', () => {
  it('a patch to a new email saves it and flags the change', () => {
    const { state, effects } = decide(contact(), { kind: 'patch', email: 'ann@new.example' }, NOW);
    expect(state?.email).toBe('ann@new.example');
    expect(saved(effects)).toEqual([{ kind: 'saveProjection', contact: state, emailChanged: true }]);
    expect(recorded(effects)).toEqual([]);
  });

  it('an upsert never changes the email', () => {
    const { state, effects } = decide(contact(), { kind: 'upsert', data: { a: 1 } }, NOW);
    expect(state?.email).toBe('ann@example.com');
    expect(saved(effects)[0]).toMatchObject({ emailChanged: false });
  });
});

describe('system events', () => {
  it('recordSystemEvent records the event as a system event and leaves the contact as it was', () => {
    const before = contact();
    const { state, effects } = decide(before, { kind: 'recordSystemEvent', name: 'email.open', data: { emailId: 'm1' } }, NOW);
    expect(state).toEqual(before);
    expect(recorded(effects)).toEqual([{ name: 'email.open', data: { emailId: 'm1' }, system: true }]);
  });

  it('an email handed to SMTP and its answer are recorded in order, email.sent at the time it was handed over', () => {
    const events = [
      { name: 'email.sent', data: { emailId: 'm1' }, eventId: 'm1:email.sent', at: '2026-01-01T00:00:00.000Z' },
      { name: 'email.delivery', data: { emailId: 'm1' }, eventId: 'm1:email.delivery' },
    ];
    expect(systemRecorded(events)).toEqual([
      { id: 'm1:email.sent', name: 'email.sent', data: { emailId: 'm1' }, system: true, at: '2026-01-01T00:00:00.000Z' },
      { id: 'm1:email.delivery', name: 'email.delivery', data: { emailId: 'm1' }, system: true },
    ]);
  });
});

describe('delete', () => {
  it('leaves no state and one deleteEverything effect', () => {
    expect(decide(contact(), { kind: 'delete' }, NOW)).toEqual({ state: undefined, effects: [{ kind: 'deleteEverything' }] });
  });
});
