import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../runtime/config.ts';
import { startInstance, TEST_MODE, type Instance } from '../harness/instance.ts';

describe('GET /docs', () => {
  let instance: Instance;

  beforeAll(async () => {
    instance = await startInstance();
  });
  afterAll(() => instance.dispose());

  it('is an HTML page that renders /openapi.json with assets the instance serves itself', async () => {
    const page = await fetch(`${instance.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();

    // Nothing from another host: the page has to work offline.
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThanOrEqual(3);
    for (const ref of refs) expect(ref).toMatch(/^\/(docs|openapi\.json)/);

    const loaded: Record<string, string> = {};
    for (const ref of refs) {
      const res = await fetch(`${instance.url}${ref}`);
      expect(res.status, ref).toBe(200);
      loaded[ref] = await res.text();
    }
    expect(loaded['/docs/assets/swagger-ui-bundle.js'].length).toBeGreaterThan(100_000);
    expect(loaded['/docs/assets/swagger-ui.css'].length).toBeGreaterThan(10_000);
    // The page's own script points the renderer at the document the API serves.
    expect(loaded['/docs/init.js']).toContain("url: '/openapi.json'");
    const openapi = (await (await fetch(`${instance.url}/openapi.json`)).json()) as { openapi: string };
    expect(openapi.openapi).toMatch(/^3\./);
  });

  it('serves only the renderer files, nothing else from the package', async () => {
    expect((await fetch(`${instance.url}/docs/assets/package.json`)).status).toBe(404);
    expect((await fetch(`${instance.url}/docs/assets/..%2Fpackage.json`)).status).toBe(404);
  });
});

/**
 * The README is a newcomer's map: every variable the platform reads, every metric and label value
 * it emits and every npm script it names must be there, and nothing that is not so.
 */
describe('the README against the code', () => {
  const root = resolve(import.meta.dirname, '../..');
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  let instance: Instance;

  beforeAll(async () => {
    instance = await startInstance();
  });
  afterAll(() => instance.dispose());

  it('Configuration lists every environment variable the platform reads, and only those', () => {
    const read = new Set<string>();
    // runtime/config.ts reads through its argument: a proxy records every name it asks for.
    loadConfig(new Proxy({}, { get: (_, name) => (typeof name === 'string' && read.add(name), undefined) }));
    // Elsewhere the platform reads process.env directly (LOG_LEVEL, LINK_SECRET, the Dapr ports).
    for (const dir of ['actors', 'adapters', 'apps', 'domain', 'ports', 'runtime']) {
      for (const file of readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })) {
        if (!file.endsWith('.ts')) continue;
        for (const m of readFileSync(join(root, dir, file), 'utf8').matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)) read.add(m[1]);
      }
    }
    const rows = tableRows(section(readme, 'Configuration'));
    const documented = new Set(rows.flatMap((row) => [...row[0].matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1])));

    expect([...read].filter((name) => !documented.has(name)).sort(), 'read by the code, missing from the README').toEqual([]);
    expect([...documented].filter((name) => !read.has(name)).sort(), 'in the README, read by no code').toEqual([]);
  });

  it('Metrics lists every metric /metrics serves, with its type, labels and label values', async () => {
    await fetch(`${instance.url}/health`); // so the latency histogram has a sample and shows its labels
    const text = await (await fetch(`${instance.url}/metrics`)).text();
    const rows = new Map(tableRows(section(readme, 'Metrics')).map((row) => [row[0].replace(/`/g, ''), row]));

    const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
    expect(types.size).toBeGreaterThan(5);
    for (const [name, type] of types) {
      if (!name.startsWith('mailroom_')) {
        expect(name, 'a process metric outside the process_* / nodejs_* row').toMatch(/^(process|nodejs)_/);
        continue;
      }
      const row = rows.get(name);
      expect(row, `${name} has no row in the README's metrics table`).toBeDefined();
      expect(row![1], `${name}'s type`).toBe(type);
      const samples = [...text.matchAll(new RegExp(`^${name}(?:_bucket|_sum|_count)?\\{([^}]*)\\}`, 'gm'))];
      const labels = new Map<string, Set<string>>();
      for (const [, list] of samples) {
        for (const [, label, value] of list.matchAll(/(\w+)="([^"]*)"/g)) {
          if (label === 'le') continue;
          labels.set(label, (labels.get(label) ?? new Set()).add(value));
        }
      }
      expect([...row![2].matchAll(/`(\w+)`/g)].map((m) => m[1]).sort(), `${name}'s labels`).toEqual([...labels.keys()].sort());
      // A histogram's labels take the values of the traffic; a gauge's or a counter's are a fixed
      // list the reader needs (statuses, outcomes, states).
      if (type === 'histogram') continue;
      for (const [label, values] of labels) {
        const missing = [...values].filter((value) => !row!.slice(3).join('|').includes(`\`${value}\``));
        expect(missing, `${name}: values of ${label} missing from the README`).toEqual([]);
      }
    }
    // One embedded process has both roles, so it serves every metric the README lists.
    if (TEST_MODE === 'embedded') {
      const listed = [...rows.keys()].filter((name) => name.startsWith('mailroom_'));
      expect(listed.filter((name) => !types.has(name)), 'in the README, served by no process').toEqual([]);
    }
  });

  it('names only npm scripts that exist', () => {
    const scripts = Object.keys((JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);
    for (const doc of ['README.md', 'bench/README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]) {
      const named = [...readFileSync(join(root, doc), 'utf8').matchAll(/\bnpm (?:run (\S+?)|(start|test))[`\s;,)]/g)].map((m) => m[1] ?? m[2]);
      expect(named.filter((name) => !scripts.includes(name)), `${doc} names npm scripts package.json lacks`).toEqual([]);
    }
  });
});

/** The text of a `## title` section of a Markdown document, up to the next `## `. */
function section(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}\n`);
  expect(start, `section "${title}"`).toBeGreaterThan(-1);
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, end === -1 ? undefined : end);
}

/** The body rows of the Markdown tables in a text, as trimmed cells. */
function tableRows(text: string): string[][] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|[-| ]+\|$/.test(line))
    .map((line) => line.slice(1, -1).split('|').map((cell) => cell.trim()))
    .filter((cells) => !['variable', 'metric'].includes(cells[0]));
}
