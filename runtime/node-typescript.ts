import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The preload that runs our TypeScript on any Node we support (see the file), in a tree. */
export const TYPESCRIPT_PRELOAD = 'runtime/load-typescript.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The node arguments before a .ts entry point: `spawn(process.execPath, [...typescriptArgs, entry])`. */
export const typescriptArgs = ['--import', join(root, TYPESCRIPT_PRELOAD)];
