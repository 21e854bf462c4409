import { createHash, randomBytes } from 'node:crypto';
import { compile } from 'html-to-text';
import juice from 'juice';
import { footerFor, withFooter, type FooterSettings } from '../../domain/mail/footer.ts';
import type { EmailContent, EmailDoc } from '../../domain/mail/outbound.ts';
import { escapeHtml, parseTemplate, renderTemplate, tagText, templateScope, type TemplateTag } from '../../domain/templates/render.ts';
import { SizedCache } from '../../runtime/sized-cache.ts';

export interface Links {
  unsubscribeUrl: string;
  subscribeUrl: string;
  manageUrl: string;
  openPixelUrl: string;
  clickUrl(url: string): string;
}

export interface Composed {
  subject: string;
  html: string;
  text: string;
}

/**
 * The content of one email as it leaves: the template rendered with the recipient's variables
 * (values escaped in HTML), CSS inlined (mail clients drop <style>), every web link routed through
 * a signed click URL, an open pixel, a plain-text part for clients that want one, and on marketing
 * email the project's footer (footer.ts), added after rendering so no template can reach it.
 */
export function compose(email: EmailDoc, content: EmailContent, links: Links | undefined, project: FooterSettings | null = null): Composed {
  if (email.kind === 'system' || !links) {
    return { subject: content.subject, html: content.html, text: content.text ?? htmlToText(content.html) };
  }
  const scope = templateScope(email.vars, {
    id: email.contactId,
    email: email.to,
    unsubscribeUrl: links.unsubscribeUrl,
    subscribeUrl: links.subscribeUrl,
    manageUrl: links.manageUrl,
  });
  const subject = renderTemplate(content.subject, scope, 'text');
  const { html: rendered, text: bodyText } = renderBody(content.html, scope);
  const ownPages = [links.unsubscribeUrl, links.subscribeUrl, links.manageUrl];
  const footer = footerFor(email.kind, project, email.vars?.locale, links, rendered);
  const { html, text } = withFooter({ html: trackLinks(rendered, links, ownPages), text: bodyText }, footer);
  return { subject, html: withPixel(html, links.openPixelUrl), text };
}

// ---- CSS inlining, once per body ---------------------------------------------------------------

/**
 * juice costs more than the rest of compose together (~1.5 ms an email), and a campaign or a
 * template sends one body to many recipients. So a body seen a second time is inlined once with
 * its template tags in place (each held by a marker juice leaves alone), and each email renders
 * its values into the inlined body. That is the HTML juice would make of each rendered email
 * when no tag sits where CSS can see it: values are HTML-escaped text, so they add no element;
 * a tag in a <style> block, in a tag or attribute name, or in a class, id or style attribute
 * could change which rules apply, and such a body is inlined per email as before. The first
 * email rendered from an inlined body is also made the per-email way and the two compared; a
 * difference sends that body the per-email way for good.
 */
/** The remembered bodies: 4,096 at most, holding 32 MB at most (the oldest changed forgotten first). */
const inlinedBodies = new SizedCache<string, InlinedBody>(4096, 32 * 1024 * 1024, (b) => ('template' in b ? b.template.length + textSize(b) : 0));

type InlinedBody =
  | { kind: 'seen' }
  | { kind: 'unchecked'; template: string }
  | CheckedBody
  | { kind: 'perEmail' };

/** A body inlined once, and its text part once too (below): not made yet, or null when per email. */
interface CheckedBody {
  kind: 'checked';
  template: string;
  text?: TextTemplate | null;
}

/** The body rendered for one email, CSS inlined, and its plain-text part. */
function renderBody(html: string, scope: Record<string, unknown>): { html: string; text: string } {
  const key = createHash('sha256').update(html).digest('base64');
  const body = inlinedBodies.get(key);
  if (body?.kind === 'checked') {
    const rendered = renderTemplate(body.template, scope, 'html');
    return { html: rendered, text: renderText(key, body, scope, rendered) };
  }
  const perEmail = juice(renderTemplate(html, scope, 'html'));
  if (body === undefined) inlinedBodies.set(key, { kind: 'seen' });
  else if (body.kind === 'seen') {
    const template = inlineTemplate(html);
    inlinedBodies.set(key, template === null ? { kind: 'perEmail' } : { kind: 'unchecked', template });
  } else if (body.kind === 'unchecked') {
    const same = renderTemplate(body.template, scope, 'html') === perEmail;
    inlinedBodies.set(key, same ? { kind: 'checked', template: body.template } : { kind: 'perEmail' });
  }
  return { html: perEmail, text: htmlToText(perEmail) };
}

/** A template's tags, each replaced by a marker no text of it holds: `<prefix><n>x`, lower case. */
function markTags(html: string): { tags: TemplateTag[]; prefix: string; marked: string } {
  const segments = parseTemplate(html);
  const tags = segments.filter((s): s is TemplateTag => typeof s !== 'string');
  let prefix: string;
  do prefix = `mrtag${randomBytes(6).toString('hex')}x`;
  while (html.toLowerCase().includes(prefix));
  let n = 0;
  const marked = segments.map((s) => (typeof s === 'string' ? s : `${prefix}${n++}x`)).join('');
  return { tags, prefix, marked };
}

/** The body inlined once with its tags kept, or null when it must be inlined per email. */
export function inlineTemplate(html: string): string | null {
  const { tags, prefix, marked } = markTags(html);
  if (tags.length === 0) return juice(html);
  if (!markersOnlyInText(marked, prefix, tags)) return null;
  const inlined = juice(marked);
  // Every marker exactly once, in order: juice kept each tag where it was.
  const found = [...inlined.matchAll(new RegExp(`${prefix}(\\d+)x`, 'g'))].map((m) => Number(m[1]));
  if (found.length !== tags.length || found.some((index, i) => index !== i)) return null;
  return inlined.replace(new RegExp(`${prefix}(\\d+)x`, 'g'), (_, index: string) => tags[Number(index)].raw);
}

const STYLE_BLOCK = /<style\b[\s\S]*?(?:<\/style\s*>|$)/gi;
const HTML_TAG = /<[a-zA-Z!/?](?:[^>"']|"[^"]*"|'[^']*')*>?/g;
const ATTRIBUTE = /(\s)([^\s"'=<>/]+)(\s*=\s*)("[^"]*"|'[^']*'|[^\s"'=<>`]+)/g;

/**
 * Whether every marker is in text content, or in a quoted attribute value that CSS does not read
 * (not class, id or style) and that cannot render empty (juice writes an empty value as a bare
 * attribute name).
 */
function markersOnlyInText(html: string, prefix: string, tags: TemplateTag[]): boolean {
  const markers = new RegExp(`${prefix}(\\d+)x`, 'g');
  for (const block of html.match(STYLE_BLOCK) ?? []) if (block.includes(prefix)) return false;
  for (const tag of html.match(HTML_TAG) ?? []) {
    if (!tag.includes(prefix)) continue;
    if (tag.startsWith('<!--')) return false; // comments: juice may drop or keep them
    const checked = tag.replace(ATTRIBUTE, (whole, space: string, name: string, eq: string, value: string) => {
      if (!value.includes(prefix) || /^(class|id|style)$/i.test(name) || !/^["']/.test(value)) return whole;
      const inner = value.slice(1, -1);
      const canBeEmpty =
        inner.replace(markers, '') === '' && [...inner.matchAll(markers)].every((m) => !tags[Number(m[1])].fallback);
      return canBeEmpty ? whole : `${space}${name}${eq}""`;
    });
    if (checked.includes(prefix)) return false;
  }
  return true;
}

// ---- the plain-text part, once per body --------------------------------------------------------

/**
 * html-to-text parses the whole rendered body for every email: 0.06 ms, a tenth of the sending
 * thread's CPU per campaign email (bench/results/campaign-profile.md). So a body inlined once
 * (above) is converted once too, each tag held by a marker, and each email puts its values where
 * the markers came out. html-to-text passes text through as it is, but collapses whitespace and
 * upper-cases headings: a value goes in as it is when it has nothing to collapse (not empty, no
 * whitespace at either end, no run of it, no line break), upper-cased where its marker came out
 * upper-cased; an email with any other value is converted the per-email way. A body whose markers
 * do not all come out once and in order, or with a tag at the start of a link (html-to-text drops
 * `#…` links and strips `mailto:`), is converted per email; the first email of a body is made both
 * ways and compared, as above.
 */
export interface TextTemplate {
  /** The text around the markers: one more than there are tags. */
  parts: string[];
  tags: TemplateTag[];
  /** Whether each tag's marker came out upper-cased. */
  upper: boolean[];
  /** The first email's text was made both ways and matched. */
  checked: boolean;
}

const textSize = (b: InlinedBody) => (b.kind === 'checked' && b.text ? b.text.parts.reduce((n, p) => n + p.length, 0) : 0);

function renderText(key: string, body: CheckedBody, scope: Record<string, unknown>, rendered: string): string {
  let text = body.text;
  if (text === undefined) {
    text = textTemplate(body.template);
    inlinedBodies.set(key, { ...body, text });
  }
  const filled = text ? fillText(text, scope) : undefined;
  if (!text || filled === undefined) return htmlToText(rendered);
  if (text.checked) return filled;
  const perEmail = htmlToText(rendered);
  if (filled === perEmail) text.checked = true;
  else inlinedBodies.set(key, { ...body, text: null });
  return perEmail;
}

/** The text part with the email's values, or undefined when one of them is not left as it is. */
export function fillText(text: TextTemplate, scope: Record<string, unknown>): string | undefined {
  let out = text.parts[0];
  for (let i = 0; i < text.tags.length; i++) {
    const value = tagText(text.tags[i], scope);
    if (!passesThrough(value)) return undefined;
    out += (text.upper[i] ? value.toUpperCase() : value) + text.parts[i + 1];
  }
  return out;
}

/** Text html-to-text would leave as it is: not empty, whitespace only single spaces between words. */
const passesThrough = (value: string) => value !== '' && !/^ | $| {2}|[\t\n\f\r\u200b]/.test(value);

/** The text part of an (inlined) body with a place for each tag's value, or null when it must be made per email. */
export function textTemplate(template: string): TextTemplate | null {
  const { tags, prefix, marked } = markTags(template);
  if (new RegExp(`\\bhref\\s*=\\s*["']?\\s*${prefix}`, 'i').test(marked)) return null;
  const text = htmlToText(marked);
  const parts: string[] = [];
  const upper: boolean[] = [];
  let last = 0;
  for (const m of text.matchAll(new RegExp(`${prefix}(\\d+)x`, 'gi'))) {
    if (Number(m[1]) !== parts.length || (m[0] !== m[0].toLowerCase() && m[0] !== m[0].toUpperCase())) return null;
    upper.push(m[0] !== m[0].toLowerCase());
    parts.push(text.slice(last, m.index));
    last = m.index + m[0].length;
  }
  if (parts.length !== tags.length) return null;
  parts.push(text.slice(last));
  return { parts, tags, upper, checked: false };
}

/**
 * Compiled once: `convert` would rebuild its selector tree for every email (~0.8 ms each). Lines
 * are not hard-wrapped: a wrap point would move with the values (and mail clients wrap text to
 * their window; a line cut at 100 characters reads broken on a phone).
 */
const htmlToText = compile({ wordwrap: false, selectors: [{ selector: 'img', format: 'skip' }] });

const ENTITIES: Record<string, string> = { '&amp;': '&', '&quot;': '"', '&#39;': "'", '&#x27;': "'", '&lt;': '<', '&gt;': '>' };
const decodeEntities = (s: string) => s.replace(/&(amp|quot|#39|#x27|lt|gt);/g, (m) => ENTITIES[m]);

/** Rewrites `<a href="http(s)://…">` to the click URL; mailto:, anchors and our own pages stay. */
function trackLinks(html: string, links: Links, ownPages: string[]): string {
  return html.replace(/(<a\b[^>]*?\bhref\s*=\s*)(["'])(.*?)\2/gis, (whole, start: string, quote: string, raw: string) => {
    const url = decodeEntities(raw.trim());
    if (!/^https?:\/\//i.test(url) || ownPages.includes(url)) return whole;
    return `${start}${quote}${escapeHtml(links.clickUrl(url))}${quote}`;
  });
}

function withPixel(html: string, pixelUrl: string): string {
  const pixel = `<img src="${escapeHtml(pixelUrl)}" width="1" height="1" alt="" style="display:none;border:0;width:1px;height:1px">`;
  const close = html.search(/<\/body\s*>/i);
  return close >= 0 ? `${html.slice(0, close)}${pixel}${html.slice(close)}` : `${html}${pixel}`;
}
