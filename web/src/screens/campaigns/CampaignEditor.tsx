import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import type { AudienceType } from '../../../../actors/campaign/states.ts';
import { createCampaignSchema, updateCampaignSchema } from '../../../../domain/campaigns/schema.ts';
import { filterConditionSchema } from '../../../../domain/segments/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { useNotices } from '../../app/notices.tsx';
import { Loading, Page } from '../../app/Page.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { paths } from '../../paths.ts';
import { listSegments, segmentKeys } from '../segments/api.ts';
import { ConditionEditor } from '../segments/ConditionEditor.tsx';
import { newCondition, prefixed, relativeTo, type FilterCondition } from '../segments/filters.ts';
import { LiveCount } from '../segments/LiveCount.tsx';
import { campaignKeys, campaignPath, countAudience, recipientsNoun, type Campaign } from './api.ts';
import { HtmlEditor } from '../../forms/HtmlEditor.tsx';

interface Domain {
  id: string;
  domain: string;
  verified: boolean;
}

interface Template {
  id: string;
  name: string;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
}

/** Compose a new campaign, or edit a DRAFT or SCHEDULED one (`/campaigns/:id/edit`). */
export function CampaignEditor() {
  const project = useCurrentProject();
  const id = useParams().campaignId;
  const campaign = useQuery({
    queryKey: campaignKeys.one(project.id, id ?? ''),
    queryFn: () => api<Campaign>(campaignPath(id!), { projectId: project.id }),
    enabled: id !== undefined,
  });
  if (id === undefined) return <Composer />;
  if (campaign.isPending) return <Page title="Edit campaign"><Loading what="Loading the campaign" /></Page>;
  if (campaign.error) return <Page title="Edit campaign"><p role="alert">{errorMessage(campaign.error)}</p></Page>;
  return <Composer campaign={campaign.data} />;
}

const AUDIENCES: { value: AudienceType; label: string }[] = [
  { value: 'ALL', label: 'All subscribed contacts' },
  { value: 'SEGMENT', label: 'A segment' },
  { value: 'FILTERED', label: 'Contacts matching a filter' },
];

function Composer({ campaign }: { campaign?: Campaign }) {
  const project = useCurrentProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const { say } = useNotices();
  const [errors, setErrors] = useState<FieldErrors>({});
  const [subject, setSubject] = useState(campaign?.subject ?? '');
  const [body, setBody] = useState(campaign?.body ?? '<p>Hello {{name ?? there}},</p>\n');
  const [fromLocal, setFromLocal] = useState(campaign ? campaign.from.slice(0, campaign.from.lastIndexOf('@')) : 'news');
  const [fromDomain, setFromDomain] = useState(campaign ? campaign.from.slice(campaign.from.lastIndexOf('@') + 1) : '');
  const [fromName, setFromName] = useState(campaign?.fromName ?? '');
  const [replyTo, setReplyTo] = useState(campaign?.replyTo ?? '');
  const [audienceType, setAudienceType] = useState<AudienceType>(campaign?.audienceType ?? 'ALL');
  const [segmentId, setSegmentId] = useState(campaign?.segmentId ?? '');
  const [condition, setCondition] = useState<FilterCondition>(() => campaign?.audienceCondition ?? newCondition());

  const domains = useQuery({
    queryKey: ['domains', project.id],
    queryFn: () => api<Domain[]>(`/domains/project/${encodeURIComponent(project.id)}`),
  });
  const verified = (domains.data ?? []).filter((d) => d.verified);
  const domain = fromDomain || verified[0]?.domain || '';
  const segments = useQuery({ queryKey: segmentKeys.all(project.id), queryFn: () => listSegments(project.id) });
  const templates = useQuery({
    queryKey: ['templates', project.id, 'for-campaigns'],
    queryFn: () => api<{ templates: Template[] }>('/templates', { projectId: project.id, query: { pageSize: 100 } }),
  });
  const fixedCount = useQuery({
    queryKey: ['audience-count', project.id, audienceType, segmentId],
    queryFn: () => countAudience(project.id, { audienceType, segmentId: segmentId || null }),
    enabled: audienceType === 'ALL' || (audienceType === 'SEGMENT' && segmentId !== ''),
    retry: false,
  });

  const save = useMutation({
    mutationFn: (payload: Record<string, unknown>) =>
      campaign
        ? api<Campaign>(campaignPath(campaign.id), { method: 'PUT', projectId: project.id, body: payload })
        : api<Campaign>('/campaigns', { method: 'POST', projectId: project.id, body: payload }),
    onSuccess: (saved) => {
      say(campaign ? 'Campaign saved' : `Campaign ${saved.name} created as a draft`);
      queryClient.setQueryData(campaignKeys.one(project.id, saved.id), saved);
      void queryClient.invalidateQueries({ queryKey: campaignKeys.all(project.id) });
      navigate(paths.screen(project.id, 'campaigns', `/${encodeURIComponent(saved.id)}`));
    },
    onError: (error) => setErrors(serverFieldErrors(error)),
  });

  function applyTemplate(templateId: string) {
    const template = templates.data?.templates.find((t) => t.id === templateId);
    if (!template) return;
    setSubject(template.subject);
    setBody(template.body);
    setFromName(template.fromName ?? '');
    setReplyTo(template.replyTo ?? '');
    const at = template.from.lastIndexOf('@');
    if (verified.some((d) => d.domain === template.from.slice(at + 1))) {
      setFromLocal(template.from.slice(0, at));
      setFromDomain(template.from.slice(at + 1));
    }
    say(`Content copied from the template ${template.name}`);
  }

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const payload = {
      name: form.get('name'),
      subject,
      body,
      from: `${fromLocal}@${domain}`,
      fromName: fromName.trim() || null,
      replyTo: replyTo.trim() || null,
      audienceType,
      ...(audienceType === 'SEGMENT' ? { segmentId } : {}),
      ...(audienceType === 'FILTERED' ? { audienceCondition: condition } : {}),
    };
    // The API's own schema (what it would refuse, the form refuses), then what only the form knows.
    const found: FieldErrors = { ...validate(campaign ? updateCampaignSchema : createCampaignSchema, payload).errors };
    if (!domain) found.from = 'Choose a verified sending domain';
    if (audienceType === 'SEGMENT' && !segmentId) found.segmentId = 'Choose a segment';
    if (audienceType === 'FILTERED') Object.assign(found, prefixed(validate(filterConditionSchema, condition).errors, 'audienceCondition'));
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    save.mutate(payload);
  }

  const title = campaign ? `Edit ${campaign.name}` : 'New campaign';
  return (
    <Page title={title}>
      <p>
        <Link to={paths.screen(project.id, 'campaigns', campaign ? `/${encodeURIComponent(campaign.id)}` : '')}>
          ← {campaign ? 'Back to the campaign' : 'All campaigns'}
        </Link>
      </p>
      <form onSubmit={submit} noValidate>
        <FormError message={save.error ? errorMessage(save.error) : undefined} />
        <section aria-labelledby="content-title" className="card">
          <h2 id="content-title">Content</h2>
          <Field label="Campaign name" name="name" defaultValue={campaign?.name} error={errors.name} maxLength={200} hint="Only you see it." />
          <Field label="Subject" value={subject} onChange={(e) => setSubject(e.target.value)} error={errors.subject} maxLength={998} hint="Supports {{variables}}." />
          <div className="actions">
            <Field label="Sender name (optional)" value={fromName} onChange={(e) => setFromName(e.target.value)} error={errors.fromName} />
            <Field label="From address" value={fromLocal} onChange={(e) => setFromLocal(e.target.value)} error={errors.from} hint={domain ? `@${domain}` : undefined} />
            <div className="field">
              <label htmlFor="campaign-domain">Sending domain</label>
              <select id="campaign-domain" value={domain} onChange={(e) => setFromDomain(e.target.value)} disabled={verified.length === 0}>
                {verified.map((d) => (
                  <option key={d.id} value={d.domain}>
                    {d.domain}
                  </option>
                ))}
              </select>
            </div>
            <Field label="Reply-to (optional)" type="email" value={replyTo} onChange={(e) => setReplyTo(e.target.value)} error={errors.replyTo} />
          </div>
          {domains.error ? (
            <p role="alert">{errorMessage(domains.error)}</p>
          ) : (
            domains.data &&
            verified.length === 0 && (
              <p className="notice">
                No verified sending domain yet: campaigns are sent from a verified domain of the project.{' '}
                <Link to={paths.screen(project.id, 'domains')}>Add and verify one</Link>.
              </p>
            )
          )}
          {/* Offered once the domains are known: a template's sender is copied only on a verified domain. */}
          {templates.data && templates.data.templates.length > 0 && !domains.isPending && (
            <div className="field">
              <label htmlFor="campaign-template">Start from a template (copies its subject and body)</label>
              <select id="campaign-template" defaultValue="" onChange={(e) => applyTemplate(e.target.value)}>
                <option value="">Write the HTML myself</option>
                {templates.data.templates.map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.name}
                  </option>
                ))}
              </select>
            </div>
          )}
          <div className="field">
            <label id="campaign-body-label">HTML body</label>
            <HtmlEditor labelledBy="campaign-body-label" value={body} onChange={setBody} invalid={!!errors.body} describedBy="campaign-body-hint" />
            <p className="hint" id="campaign-body-hint">
              {'{{name}}'} reads the contact's data, {'{{name ?? friend}}'} with a fallback. Press Escape, then Tab, to leave the editor.
            </p>
            {errors.body && <p className="field-error">{errors.body}</p>}
          </div>
        </section>

        <section aria-labelledby="audience-title" className="card">
          <h2 id="audience-title">Audience</h2>
          <fieldset className="choice-row">
            <legend>Send to</legend>
            {AUDIENCES.map((a) => (
              <label key={a.value}>
                <input type="radio" name="audienceType" value={a.value} checked={audienceType === a.value} onChange={() => setAudienceType(a.value)} /> {a.label}
              </label>
            ))}
          </fieldset>
          {errors.audienceType && <p className="field-error">{errors.audienceType}</p>}
          {audienceType === 'SEGMENT' && (
            <div className="field">
              <label htmlFor="campaign-segment">Segment</label>
              <select id="campaign-segment" value={segmentId} onChange={(e) => setSegmentId(e.target.value)} aria-invalid={errors.segmentId ? true : undefined}>
                <option value="">Choose a segment</option>
                {(segments.data ?? []).map((s) => (
                  <option key={s.id} value={s.id}>
                    {s.name} ({s.memberCount.toLocaleString()} members)
                  </option>
                ))}
              </select>
              {errors.segmentId && <p className="field-error">{errors.segmentId}</p>}
            </div>
          )}
          {audienceType === 'FILTERED' ? (
            <ConditionEditor
              label="Audience filter"
              value={condition}
              onChange={setCondition}
              count={(c) => countAudience(project.id, { audienceType: 'FILTERED', audienceCondition: c })}
              countKey={['audience-count', project.id, 'FILTERED']}
              noun={recipientsNoun}
              errorPrefix="audienceCondition"
              saveErrors={relativeTo(errors, 'audienceCondition')}
            />
          ) : audienceType === 'SEGMENT' && !segmentId ? null : fixedCount.error ? (
            <p role="alert">{errorMessage(fixedCount.error)}</p>
          ) : (
            <LiveCount count={fixedCount.data} pending={fixedCount.isFetching} incomplete={false} noun={recipientsNoun} />
          )}
        </section>

        <button type="submit" className="primary" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : campaign ? 'Save campaign' : 'Save draft'}
        </button>
      </form>
    </Page>
  );
}
