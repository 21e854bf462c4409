import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { credentialsSchema } from '../../../../domain/accounts/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useSession } from '../../api/session.tsx';
import { Page } from '../../app/Page.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { paths } from '../../paths.ts';

/**
 * Signup, then sign-in with the same credentials for the session cookie (signup's own token
 * stays out of the page). An address that already has an account gets the API's same answer; its
 * sign-in then fails unless the password is that account's, and we say to check the inbox.
 */
export default function SignUp() {
  const { signIn } = useSession();
  const navigate = useNavigate();
  const [errors, setErrors] = useState<FieldErrors>({});
  const [failure, setFailure] = useState<string>();
  const [checkInbox, setCheckInbox] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const checked = validate(credentialsSchema, { email: form.get('email'), password: form.get('password') });
    setErrors(checked.errors ?? {});
    setFailure(undefined);
    if (!checked.data) return;
    setBusy(true);
    try {
      await api('/auth/signup', { method: 'POST', body: checked.data, quietUnauthorized: true });
    } catch (error) {
      setErrors(serverFieldErrors(error));
      setFailure(errorMessage(error));
      setBusy(false);
      return;
    }
    try {
      await signIn(checked.data.email, checked.data.password);
      navigate(paths.newProject, { replace: true, state: { signedUp: checked.data.email } });
    } catch {
      setCheckInbox(checked.data.email);
      setBusy(false);
    }
  }

  if (checkInbox) {
    return (
      <Page title="Check your inbox">
        <p className="card">
          We sent an email to {checkInbox}. Open its link, then <Link to={paths.signIn}>sign in</Link>.
        </p>
      </Page>
    );
  }
  return (
    <Page title="Create your account">
      <form className="card" onSubmit={submit} noValidate>
        <FormError message={failure} />
        <Field label="Email" name="email" type="email" autoComplete="email" error={errors.email} required />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete="new-password"
          error={errors.password}
          hint="At least 8 characters."
          required
        />
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Creating your account…' : 'Create account'}
        </button>
        <p>
          Already have an account? <Link to={paths.signIn}>Sign in</Link>
        </p>
      </form>
    </Page>
  );
}
