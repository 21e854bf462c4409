import { fileURLToPath } from 'node:url';

/** The preload that runs our TypeScript on any Node we support (see load-typescript.mjs). */
export const LOAD_TYPESCRIPT = fileURLToPath(new URL('./load-typescript.mjs', import.meta.url));

/** The node arguments before a .ts entry point: `spawn(process.execPath, [...typescriptArgs, entry])`. */
export const typescriptArgs = ['--import', LOAD_TYPESCRIPT];
