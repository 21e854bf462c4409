/**
 * The dashboard's first-load weight: builds web/ (production, as `npm start` serves it) and
 * measures what a first visit to the sign-in route downloads, JavaScript gzip-compressed, next to
 * the budget of 300 KB; and the same for the heaviest screen built so far.
 *
 *   npm run bench:dashboard [-- --note "…"] [--no-record]
 *
 * Results are printed and appended to bench/results/dashboard.md (unless --no-record).
 */
import { parseArgs } from 'node:util';
import { buildWeb } from '../scripts/build-web.ts';
import { appendResults, machineFacts } from './common.ts';
import { firstLoadOf, SIGN_IN_BUDGET_BYTES, SIGN_IN_SCREEN } from './dashboard-size.ts';

const { values: args } = parseArgs({ options: { note: { type: 'string' }, 'no-record': { type: 'boolean' } } });
const startedAt = new Date();
const facts = machineFacts();
const built = Date.now();
await buildWeb();
const buildSeconds = (Date.now() - built) / 1000;

const kb = (bytes: number) => (bytes / 1024).toFixed(1);
const routes = [
  ['sign-in (`/signin`)', SIGN_IN_SCREEN],
  ['settings (`/p/:id/settings`)', 'src/screens/settings/Settings.tsx'],
  ['overview (`/p/:id/overview`)', 'src/screens/overview/Overview.tsx'],
] as const;
const body = [
  '| first load of | JS files | JS (KB) | **JS gzip (KB)** | CSS gzip (KB) | budget |',
  '| --- | ---: | ---: | ---: | ---: | --- |',
];
let failed = false;
for (const [label, source] of routes) {
  const load = firstLoadOf(source);
  const signIn = source === SIGN_IN_SCREEN;
  if (signIn && load.jsGzipBytes >= SIGN_IN_BUDGET_BYTES) failed = true;
  const verdict = signIn ? (load.jsGzipBytes < SIGN_IN_BUDGET_BYTES ? '< 300 KB: **met**' : '< 300 KB: **not met**') : '';
  body.push(`| ${label} | ${load.files.filter((f) => f.file.endsWith('.js')).length} | ${kb(load.jsBytes)} | **${kb(load.jsGzipBytes)}** | ${kb(load.cssGzipBytes)} | ${verdict} |`);
}
console.log(body.join('\n'));
if (!args['no-record']) {
  appendResults('dashboard', 'Dashboard first-load results', {
    startedAt,
    facts,
    config: [`vite build (production) in ${buildSeconds.toFixed(1)} s; gzip level 9 of each file the route loads (Vite manifest: entry, lazy screen, their static imports)`],
    note: args.note,
    body,
  });
}
process.exit(failed ? 1 : 0);
