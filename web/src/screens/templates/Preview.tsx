import { renderTemplate, templateScope } from '../../../../domain/templates/render.ts';

export interface PreviewContact {
  id: string;
  email: string;
  data: Record<string, unknown>;
}

/**
 * The email as the chosen contact would get it, rendered by the server's own engine
 * (domain/templates/render.ts: the body in html mode, the subject in text mode, system variables
 * over data). Links to unsubscribe or manage are signed by the mailer, so they show as `#`.
 * The iframe is sandboxed with no permission at all: the template's scripts never run and it
 * cannot reach the dashboard.
 */
export function Preview({ subject, body, contact }: { subject: string; body: string; contact: PreviewContact | null }) {
  const scope = templateScope(contact?.data ?? {}, {
    id: contact?.id ?? null,
    email: contact?.email ?? null,
    unsubscribeUrl: '#',
    subscribeUrl: '#',
    manageUrl: '#',
  });
  return (
    <div className="preview">
      <p>
        <strong>Subject:</strong> <span data-testid="preview-subject">{renderTemplate(subject, scope, 'text')}</span>
      </p>
      <iframe title="Preview of the email" sandbox="" srcDoc={renderTemplate(body, scope, 'html')} />
      <p className="hint">{contact ? `Rendered with the data of ${contact.email}.` : 'Rendered with no contact: variables show their fallbacks.'}</p>
    </div>
  );
}
