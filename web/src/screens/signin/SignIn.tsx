import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { signInSchema } from '../../../../domain/accounts/schema.ts';
import { errorMessage } from '../../api/client.ts';
import { useSession } from '../../api/session.tsx';
import { Page } from '../../app/Page.tsx';
import { preloadAfterSignIn } from '../../app/routes.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { paths } from '../../paths.ts';

/** Only a path of this app: `next` must not send a user who just signed in to another site. */
export const safeNext = (next: string | null) => (next && next.startsWith('/') && !next.startsWith('//') ? next : paths.home);

export default function SignIn() {
  const { signIn } = useSession();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [errors, setErrors] = useState<FieldErrors>({});
  const [failure, setFailure] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const checked = validate(signInSchema, { email: form.get('email'), password: form.get('password') });
    setErrors(checked.errors ?? {});
    setFailure(undefined);
    if (!checked.data) return;
    setBusy(true);
    const next = safeNext(params.get('next'));
    preloadAfterSignIn(next);
    try {
      await signIn(checked.data.email, checked.data.password);
      navigate(next, { replace: true });
    } catch (error) {
      setErrors(serverFieldErrors(error));
      setFailure(errorMessage(error));
      setBusy(false);
    }
  }

  return (
    <Page title="Sign in">
      <form className="card" onSubmit={submit} noValidate>
        <FormError message={failure} />
        <Field label="Email" name="email" type="email" autoComplete="email" error={errors.email} required />
        <Field label="Password" name="password" type="password" autoComplete="current-password" error={errors.password} required />
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p>
          No account yet? <Link to={paths.signUp}>Create one</Link>
        </p>
      </form>
    </Page>
  );
}
