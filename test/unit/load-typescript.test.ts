import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import module from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { typescriptArgs } from '../../runtime/node-typescript.ts';

// runtime/load-typescript.mjs, which every process of ours is started with: Node's own type
// stripping where Node has it, tsx where it has not (simulated with --no-experimental-strip-types).
// How to tell them apart: tsx compiles with keepNames, which wraps each closure in __name(...), and
// a function's source text shows it; stripping leaves the source as written.

let dir: string;
let entry: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-load-ts-'));
  entry = path.join(dir, 'entry.ts');
  fs.writeFileSync(
    entry,
    [
      "import { double } from './helper.ts';",
      'function outer(): () => number {',
      '  const inner = (): number => double(21);',
      '  return inner;',
      '}',
      'const typed: number = outer()();',
      "console.log(JSON.stringify({ typed, wrapped: outer.toString().includes('__name'), features: process.features.typescript ?? null }));",
    ].join('\n'),
  );
  fs.writeFileSync(path.join(dir, 'helper.ts'), 'export const double = (n: number): number => n * 2;\n');
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function run(nodeFlags: string[]): { typed: number; wrapped: boolean; features: string | false | null } {
  const result = spawnSync(process.execPath, [...nodeFlags, ...typescriptArgs, entry], { encoding: 'utf8' });
  expect(result.stderr).not.toMatch(/Error/);
  expect(result.status).toBe(0);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!);
}

describe('runtime/load-typescript.mjs', () => {
  it("runs TypeScript with Node's own type stripping (npm's Node 24 has it), so no closure is wrapped to keep its name", () => {
    // On a Node without stripping (a machine where npm could not bring Node 24), tsx runs it.
    const strips = !!process.features.typescript;
    expect(run([])).toEqual({ typed: 42, wrapped: !strips, features: strips ? 'strip' : false });
  });

  it("turns on Node's module compile cache, in its default directory under the temporary one, where Node has one", () => {
    // Not through NODE_COMPILE_CACHE, which would turn it on by itself: the preload must.
    const tmp = path.join(dir, 'tmp');
    fs.mkdirSync(tmp);
    const probe = path.join(dir, 'cache-probe.ts');
    fs.writeFileSync(probe, "import module from 'node:module';\nconsole.log(JSON.stringify({ dir: module.getCompileCacheDir?.() ?? null }));\n");
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp };
    delete env.NODE_COMPILE_CACHE;
    delete env.NODE_DISABLE_COMPILE_CACHE;
    const result = spawnSync(process.execPath, [...typescriptArgs, probe], { encoding: 'utf8', env });
    expect(result.status).toBe(0);
    const { dir: used } = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as { dir: string | null };
    if (typeof (module as { enableCompileCache?: unknown }).enableCompileCache !== 'function') {
      expect(used).toBeNull(); // Node 20: no such cache
      return;
    }
    expect(used!.startsWith(path.join(tmp, 'node-compile-cache'))).toBe(true);
    // The compiled code was written there when the process ended.
    expect(fs.readdirSync(used!).length).toBeGreaterThan(0);
  });

  it('runs it through tsx on a Node that cannot strip types', () => {
    expect(run(['--no-experimental-strip-types'])).toEqual({ typed: 42, wrapped: true, features: false });
  });
});
