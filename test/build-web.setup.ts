import { ensureWebBuilt } from '../scripts/build-web.ts';

/** The dashboard tests load the built app (web/dist): build it once, before any test file, when stale. */
export default async function setup(): Promise<void> {
  await ensureWebBuilt();
}
