import { Component, type ErrorInfo, type ReactNode } from 'react';
import { errorMessage } from '../api/client.ts';

interface State {
  error: unknown;
}

/** A screen that throws shows what went wrong instead of a blank page; the rest of the shell stays usable. */
export class ErrorBoundary extends Component<{ children: ReactNode }, State> {
  state: State = { error: null };

  static getDerivedStateFromError(error: unknown): State {
    return { error };
  }

  componentDidCatch(error: unknown, info: ErrorInfo) {
    console.error('screen failed', error, info.componentStack);
  }

  render() {
    if (this.state.error === null) return this.props.children;
    return (
      <section className="screen-error" role="alert">
        <h1 tabIndex={-1}>This screen failed</h1>
        <p>{errorMessage(this.state.error)}</p>
        <button type="button" onClick={() => this.setState({ error: null })}>
          Try again
        </button>
      </section>
    );
  }
}
