import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

it('counts a failing beforeAll as a failure even when another test of the file failed too', () => {
  const run = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--config', 'test/fixtures/reporter/vitest.config.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  const summary = /^(\d+) passed, (\d+) failed, (\d+) skipped$/m.exec(run.stdout);
  expect(summary?.[0], run.stdout + run.stderr).toBe('1 passed, 2 failed, 1 skipped');
  expect(run.status).not.toBe(0);
});
