import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { CANCELLABLE, DELETABLE, EDITABLE, SENDABLE } from '../../../../actors/campaign/states.ts';
import { emailSchema } from '../../../../domain/contacts/schema.ts';
import { api, apiEnvelope, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { useDisclosure } from '../../app/disclosure.ts';
import { useNotices } from '../../app/notices.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate } from '../../forms/validate.ts';
import { paths } from '../../paths.ts';
import { fromLocalInput, toLocalInput } from '../segments/filters.ts';
import { campaignKeys, campaignPath, countAudience, recipientsNoun, timeZone, type Campaign } from './api.ts';

type Confirming = 'send' | 'cancel' | 'delete';

/**
 * What the campaign's state allows, and nothing else (the rules of actors/campaign/states.ts):
 * edit, send now or schedule in DRAFT or SCHEDULED; cancel while SCHEDULED or SENDING; delete in
 * DRAFT or CANCELLED; a test send and a duplicate always. Irreversible moves are asked twice.
 */
export function CampaignActions({ campaign }: { campaign: Campaign }) {
  const project = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const { say } = useNotices();
  const confirming = useDisclosure<Confirming>();
  const [testEmail, setTestEmail] = useState('');
  const [testError, setTestError] = useState<string>();
  const [scheduleAt, setScheduleAt] = useState(() => toLocalInput(campaign.scheduledFor));
  const [scheduleError, setScheduleError] = useState<string>();
  const path = campaignPath(campaign.id);
  const sendable = SENDABLE.includes(campaign.status);
  const recipients = useQuery({
    queryKey: ['audience-count', project.id, 'campaign', campaign.id, campaign.updatedAt],
    queryFn: () =>
      countAudience(project.id, { audienceType: campaign.audienceType, segmentId: campaign.segmentId, audienceCondition: campaign.audienceCondition }),
    enabled: sendable,
    retry: false,
  });

  const settle = (updated: Campaign | undefined, message: string) => {
    say(message);
    confirming.close();
    if (updated) queryClient.setQueryData(campaignKeys.one(project.id, updated.id), updated);
    return queryClient.invalidateQueries({ queryKey: campaignKeys.all(project.id) });
  };
  const post = (suffix: string, body?: unknown) => api<Campaign>(`${path}${suffix}`, { method: 'POST', projectId: project.id, body });

  const send = useMutation({
    mutationFn: (scheduledFor: string | null) => post('/send', scheduledFor ? { scheduledFor } : {}),
    onSuccess: (c) => settle(c, c.status === 'SCHEDULED' ? `Scheduled for ${new Date(c.scheduledFor!).toLocaleString()}` : 'Sending started'),
    onError: (error) => setScheduleError(serverFieldErrors(error).scheduledFor),
  });
  const cancel = useMutation({ mutationFn: () => post('/cancel'), onSuccess: (c) => settle(c, 'Campaign cancelled') });
  const duplicate = useMutation({
    mutationFn: () => post('/duplicate'),
    onSuccess: async (copy) => {
      await settle(undefined, `Duplicated as a new draft`);
      navigate(paths.screen(project.id, 'campaigns', `/${encodeURIComponent(copy.id)}`));
    },
  });
  const remove = useMutation({
    mutationFn: () => apiEnvelope(path, { method: 'DELETE', projectId: project.id }),
    onSuccess: async () => {
      await settle(undefined, `Campaign ${campaign.name} deleted`);
      queryClient.removeQueries({ queryKey: campaignKeys.one(project.id, campaign.id) });
      navigate(paths.screen(project.id, 'campaigns'));
    },
  });
  const test = useMutation({
    mutationFn: (email: string) => apiEnvelope<{ email: string; to: string }>(`${path}/test`, { method: 'POST', projectId: project.id, body: { email } }),
    onSuccess: (answer) => {
      say(answer.message ?? 'Test email sent');
      setTestError(undefined);
    },
    onError: (error) => setTestError(serverFieldErrors(error).email),
  });
  const failed = [send, cancel, duplicate, remove].find((m) => m.error)?.error;

  function sendTest(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const checked = validate(emailSchema, testEmail);
    setTestError(checked.errors?.form);
    if (checked.data) test.mutate(checked.data);
  }

  function schedule(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const at = fromLocalInput(scheduleAt);
    if (!at) return setScheduleError('Choose a date and time');
    if (Date.parse(at) <= Date.now()) return setScheduleError('Choose a time in the future');
    setScheduleError(undefined);
    send.mutate(at);
  }

  return (
    <section aria-labelledby="actions-title" className="card">
      <h2 id="actions-title">Actions</h2>
      <FormError message={failed ? errorMessage(failed) : undefined} />
      <div className="actions">
        {EDITABLE.includes(campaign.status) && (
          <Link className="button" to={paths.screen(project.id, 'campaigns', `/${encodeURIComponent(campaign.id)}/edit`)}>
            Edit
          </Link>
        )}
        {sendable && (
          <button type="button" className="primary" ref={confirming.opener('send')} onClick={() => confirming.show('send')}>
            Send now
          </button>
        )}
        {CANCELLABLE.includes(campaign.status) && (
          <button type="button" ref={confirming.opener('cancel')} onClick={() => confirming.show('cancel')}>
            {campaign.status === 'SENDING' ? 'Stop sending' : 'Cancel campaign'}
          </button>
        )}
        <button type="button" onClick={() => duplicate.mutate()} disabled={duplicate.isPending}>
          Duplicate
        </button>
        {DELETABLE.includes(campaign.status) && (
          <button type="button" className="danger" ref={confirming.opener('delete')} onClick={() => confirming.show('delete')}>
            Delete
          </button>
        )}
      </div>

      {confirming.open === 'send' && (
        <div className="confirm" role="group" aria-label="Confirm sending" {...confirming.dismissable}>
          <p>
            {recipients.error
              ? errorMessage(recipients.error)
              : recipients.data === undefined
                ? 'Counting the recipients…'
                : `Send to ${recipientsNoun(recipients.data)}? This cannot be undone.`}
          </p>
          <button type="button" className="primary" onClick={() => send.mutate(null)} disabled={send.isPending} autoFocus>
            {send.isPending ? 'Sending…' : 'Yes, send now'}
          </button>{' '}
          <button type="button" onClick={confirming.close}>
            Not now
          </button>
        </div>
      )}
      {confirming.open === 'cancel' && (
        <div className="confirm" role="group" aria-label="Confirm cancellation" {...confirming.dismissable}>
          <p>{campaign.status === 'SENDING' ? 'Emails not handed to the mail server yet will not be sent.' : 'The campaign will not be sent.'} Cancel it?</p>
          <button type="button" className="danger" onClick={() => cancel.mutate()} disabled={cancel.isPending} autoFocus>
            Yes, cancel it
          </button>{' '}
          <button type="button" onClick={confirming.close}>
            Keep it
          </button>
        </div>
      )}
      {confirming.open === 'delete' && (
        <div className="confirm" role="group" aria-label="Confirm deletion" {...confirming.dismissable}>
          <p>Delete {campaign.name}? This cannot be undone.</p>
          <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending} autoFocus>
            Yes, delete it
          </button>{' '}
          <button type="button" onClick={confirming.close}>
            Keep it
          </button>
        </div>
      )}

      {sendable && (
        <form onSubmit={schedule} noValidate className="inline-form" aria-label="Schedule">
          <h3>{campaign.status === 'SCHEDULED' ? 'Reschedule' : 'Schedule'}</h3>
          <Field
            label={`Send at (your time, ${timeZone()})`}
            type="datetime-local"
            value={scheduleAt}
            onChange={(e) => setScheduleAt(e.target.value)}
            error={scheduleError}
            hint={scheduleAt && fromLocalInput(scheduleAt) ? `That is ${fromLocalInput(scheduleAt).replace('T', ' ').slice(0, 16)} UTC.` : undefined}
          />
          <button type="submit" disabled={send.isPending}>
            {campaign.status === 'SCHEDULED' ? 'Reschedule' : 'Schedule'}
          </button>
        </form>
      )}

      <form onSubmit={sendTest} noValidate className="inline-form" aria-label="Send a test">
        <h3>Send a test</h3>
        <FormError message={test.error && !testError ? errorMessage(test.error) : undefined} />
        <Field label="Test address" type="email" value={testEmail} onChange={(e) => setTestEmail(e.target.value)} error={testError} hint="One email now, subject marked [TEST]; not counted in the stats." />
        <button type="submit" disabled={test.isPending}>
          {test.isPending ? 'Sending…' : 'Send test'}
        </button>
        {/* A live region that is there before the result, so the result is announced. */}
        <span className="saved" role="status">
          {test.isSuccess && !test.isPending && ` Test sent to ${test.data.data.to}.`}
        </span>
      </form>
    </section>
  );
}
