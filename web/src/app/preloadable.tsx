import { use, type ComponentType, type FunctionComponent } from 'react';

type Module = { default: ComponentType };

export type Preloadable = FunctionComponent & {
  /** Fetches the code now, ahead of the first render; a failure shows when it renders. */
  preload(): void;
};

/**
 * A component whose code is its own chunk, loaded on first render as with React.lazy, which can
 * also be fetched ahead. Unlike React.lazy, whose first render always commits the Suspense
 * fallback, a component whose code has arrived renders at once. It matters: React holds back what
 * follows a fallback for 300 ms, so each "Loading…" on the way from sign-in to the Overview cost that.
 */
export function preloadable(load: () => Promise<Module>): Preloadable {
  let loaded: Module | undefined;
  let loading: Promise<Module> | undefined;
  const code = () =>
    (loading ??= load().then(
      (module) => (loaded = module),
      (error: unknown) => {
        // Forgotten, so the next render tries again (the error boundary shows this failure).
        loading = undefined;
        throw error;
      },
    ));
  function Loaded() {
    const Component = (loaded ?? use(code())).default;
    return <Component />;
  }
  return Object.assign(Loaded, { preload: () => void code().catch(() => {}) });
}
