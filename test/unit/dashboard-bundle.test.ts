import { describe, expect, it } from 'vitest';
import { firstLoadOf, SIGN_IN_BUDGET_BYTES, SIGN_IN_SCREEN } from '../../bench/dashboard-size.ts';

/** The dashboard as built (test/build-web.setup.ts builds web/dist when stale). */
describe('the dashboard bundle', () => {
  it('the first load of sign-in stays under 300 KB of compressed JavaScript', () => {
    const load = firstLoadOf(SIGN_IN_SCREEN);
    expect(load.jsGzipBytes, load.files.map((f) => `${f.file} ${f.gzipBytes}`).join('\n')).toBeLessThan(SIGN_IN_BUDGET_BYTES);
  });

  it('each screen is its own chunk: sign-in loads none of the project screens', () => {
    const signIn = new Set(firstLoadOf(SIGN_IN_SCREEN).files.map((f) => f.file));
    const settings = firstLoadOf('src/screens/settings/Settings.tsx').files.map((f) => f.file);
    const settingsOnly = settings.filter((file) => !signIn.has(file));
    expect(settingsOnly.some((file) => /Settings-[\w-]+\.js$/.test(file)), settings.join(', ')).toBe(true);
  });
});
