import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

/**
 * axe-core's audit of what a page shows now, against WCAG 2.1 A and AA (the level issue #16
 * asks for), described one line per failing element so a failure says what to fix: rule,
 * impact, the element's selector, axe's help and its page. Empty when the page passes.
 *
 * The source is evaluated through the DevTools protocol (page.evaluate), which the app's CSP
 * (`script-src 'self'`) does not govern: the page under test keeps its real policy.
 */
export const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

let source: Promise<string> | undefined;
const axeSource = () => (source ??= readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8'));

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  helpUrl: string;
  nodes: { target: unknown[]; html: string; failureSummary?: string }[];
}

export async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(await axeSource());
  // A string, as browser.ts does: the tests are type-checked without the DOM's types.
  const violations = await page.evaluate<AxeViolation[]>(`axe.run(document, { runOnly: { type: 'tag', values: ${JSON.stringify(WCAG_21_AA)} }, resultTypes: ['violations'] })
    .then((result) => result.violations.map(({ id, impact, help, helpUrl, nodes }) => ({ id, impact, help, helpUrl, nodes: nodes.map(({ target, html, failureSummary }) => ({ target, html, failureSummary })) })))`);
  return violations.flatMap((v) =>
    v.nodes.map((n) => `${v.id} (${v.impact}) at ${JSON.stringify(n.target)} ${n.html.slice(0, 160)}: ${v.help} ${v.helpUrl}${n.failureSummary ? `\n    ${n.failureSummary.replace(/\n/g, '\n    ')}` : ''}`),
  );
}
