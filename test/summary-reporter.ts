import type { Reporter, TestModule } from 'vitest/node';

/**
 * Ends the run with one plain line, `N passed, N failed, N skipped`, that tools reading test
 * output understand whatever the runner (unhandled errors and files failing outside a test count as failures).
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const module of modules) {
      let failedHere = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failedHere++;
        else skipped++;
      }
      // A hook that failed (a beforeAll that left its tests skipped, an afterAll) is a failure of
      // its own, whatever else failed in the file; a file that failed with nothing counted (an
      // import error) is one failure. Never a quiet skip.
      failedHere += [module, ...module.children.allSuites()].filter((suite) => suite.errors().length > 0).length;
      failed += module.state() === 'failed' ? Math.max(failedHere, 1) : failedHere;
    }
    console.log(`\n${passed} passed, ${failed} failed, ${skipped} skipped`);
  }
}
