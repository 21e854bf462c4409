// The footer of marketing email (DESIGN "Mail loop"): the unsubscribe and preference links and
// the project's postal address, in the contact's language. Pure: the mailer loads the project's
// settings and appends what this returns to the rendered email.
import { escapeHtml } from '../templates/render.ts';
import type { EmailKind } from './outbound.ts';
import { pageLanguage, stringsFor, type Language } from './pages-i18n.ts';

/** What a project says about its footer (`PATCH /projects/:id`). */
export interface FooterSettings {
  name: string;
  language: string;
  /** Postal address, lines separated by line breaks; none when absent or empty. */
  address?: string;
  /** Absent means on: projects made before the setting existed get the footer too. */
  footer?: boolean;
}

export interface FooterLinks {
  unsubscribeUrl: string;
  manageUrl: string;
}

export interface Footer {
  language: Language;
  html: string;
  text: string;
}

/**
 * The footer an email ends with, or null: marketing email only (transactional and the platform's
 * own mail never), unless the project turned it off, and never when the rendered body already
 * offers the contact's unsubscribe link (by `{{unsubscribeUrl}}` or the URL written out), so no
 * email carries two.
 */
export function footerFor(
  kind: EmailKind,
  project: FooterSettings | null,
  contactLocale: unknown,
  links: FooterLinks,
  renderedHtml: string,
): Footer | null {
  if (kind !== 'marketing' || !project || project.footer === false) return null;
  if (carriesUnsubscribeLink(renderedHtml, links.unsubscribeUrl)) return null;
  const language = pageLanguage(contactLocale, project.language);
  return renderFooter(language, project, links);
}

/** Rendered HTML holds a URL escaped (as `{{unsubscribeUrl}}` inserts it) or, in text, as written. */
export const carriesUnsubscribeLink = (renderedHtml: string, unsubscribeUrl: string): boolean =>
  renderedHtml.includes(escapeHtml(unsubscribeUrl)) || renderedHtml.includes(unsubscribeUrl);

const MUTED = 'color:#6b7280';

function renderFooter(language: Language, project: FooterSettings, links: FooterLinks): Footer {
  const t = stringsFor(language);
  const notice = t.footerNotice.replace('{project}', () => project.name); // a function: `$&` in a name stays as written
  const lines = (project.address ?? '').split(/\r?\n/).map((line) => line.trim()).filter(Boolean);
  const link = (url: string, label: string) => `<a href="${escapeHtml(url)}" style="${MUTED};text-decoration:underline">${escapeHtml(label)}</a>`;
  const html = [
    // Inline styles only: the template's style sheet was inlined before, and clients drop <style>.
    `<div lang="${language}" style="margin:32px 0 0;padding:16px 0 0;border-top:1px solid #e5e7eb;font:12px/1.5 Arial,Helvetica,sans-serif;${MUTED};text-align:center">`,
    `<p style="margin:0 0 8px">${escapeHtml(notice)}</p>`,
    `<p style="margin:0 0 8px">${link(links.unsubscribeUrl, t.footerUnsubscribe)} &middot; ${link(links.manageUrl, t.footerPreferences)}</p>`,
    ...(lines.length > 0 ? [`<p style="margin:0">${lines.map(escapeHtml).join('<br>')}</p>`] : []),
    '</div>',
  ].join('');
  const text = [notice, `${t.footerUnsubscribe}: ${links.unsubscribeUrl}`, `${t.footerPreferences}: ${links.manageUrl}`, ...lines].join('\n');
  return { language, html, text };
}

/**
 * The rendered email with the footer at its end: in the HTML before `</body>` (or last), in the
 * text part after a rule. Appended after rendering, so no template tag or value reaches it.
 */
export function withFooter(content: { html: string; text: string }, footer: Footer | null): { html: string; text: string } {
  if (!footer) return content;
  const close = content.html.search(/<\/body\s*>/i);
  const html = close >= 0 ? `${content.html.slice(0, close)}${footer.html}${content.html.slice(close)}` : `${content.html}${footer.html}`;
  return { html, text: `${content.text.trimEnd()}\n\n---\n${footer.text}` };
}
