// Preloaded by every process that runs the project's TypeScript (`node --import
// ./runtime/load-typescript.mjs <entry>.ts`; from code, typescriptArgs in node-typescript.ts),
// the mailer's sending threads included.
//
// Node 22.18+, 23.6+ and 24 strip the types themselves: the code is erasable syntax only
// (tsconfig: erasableSyntaxOnly, verbatimModuleSyntax), which is all stripping runs. Older Node
// (20) gets tsx's loader instead. Why not tsx everywhere: it compiles with esbuild's keepNames,
// so every function made at run time (each closure, each arrow in an object literal) is followed
// by an Object.defineProperty that names it. Without it, a campaign email the relay signs cost
// about 6% less CPU (median of six paired runs, 1–13%); one the platform signs, the same within
// the noise (bench/results/campaign-profile.md, session 13).
if (!process.features.typescript) await import('tsx');
