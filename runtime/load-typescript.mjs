// Preloaded by every process that runs the project's TypeScript (`node --import
// ./runtime/load-typescript.mjs <entry>.ts`; from code, typescriptArgs in node-typescript.ts),
// the mailer's sending threads included.
//
// Node 22.18+, 23.6+ and 24 strip the types themselves: the code is erasable syntax only
// (tsconfig: erasableSyntaxOnly, verbatimModuleSyntax), which is all stripping runs. Older Node
// (20) gets tsx's loader instead. Why not tsx everywhere: it compiles with esbuild's keepNames,
// so every function made at run time (each closure, each arrow in an object literal) is followed
// by an Object.defineProperty that names it. Without it, a campaign email cost about 5% less CPU
// when the relay signs it (median of seven paired runs, 1–13%) and 1% when the platform does
// (five pairs, +3% to −7%) (bench/results/campaign-profile.md, session 13).
if (!process.features.typescript) await import('tsx');

// V8's compiled code (and Node 24's stripped TypeScript) kept on disk between runs: a sending
// thread loaded its modules in about 225 ms, 115 with the cache. Node's default directory
// (os.tmpdir()/node-compile-cache, or NODE_COMPILE_CACHE); Node 20 has no such cache.
import module from 'node:module';
module.enableCompileCache?.();
