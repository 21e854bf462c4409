import { compile } from 'html-to-text';
import juice from 'juice';
import type { EmailDoc } from '../../domain/mail/outbound.ts';
import { escapeHtml, renderTemplate, templateScope } from '../../domain/templates/render.ts';

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
 * a signed click URL, an open pixel, and a plain-text part for clients that want one.
 */
export function compose(email: EmailDoc, links: Links | undefined): Composed {
  if (email.kind === 'system' || !links) {
    return { subject: email.subject, html: email.html, text: email.text ?? htmlToText(email.html) };
  }
  const scope = templateScope(email.vars, {
    id: email.contactId,
    email: email.to,
    unsubscribeUrl: links.unsubscribeUrl,
    subscribeUrl: links.subscribeUrl,
    manageUrl: links.manageUrl,
  });
  const subject = renderTemplate(email.subject, scope, 'text');
  const rendered = juice(renderTemplate(email.html, scope, 'html'));
  const text = htmlToText(rendered);
  const ownPages = [links.unsubscribeUrl, links.subscribeUrl, links.manageUrl];
  return { subject, html: withPixel(trackLinks(rendered, links, ownPages), links.openPixelUrl), text };
}

/** Compiled once: `convert` would rebuild its selector tree for every email (~0.8 ms each). */
const htmlToText = compile({ wordwrap: 100, selectors: [{ selector: 'img', format: 'skip' }] });

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
