import { createHash } from 'node:crypto';
import type { Response } from 'express';
import type { Language } from '../../../domain/mail/pages-i18n.ts';
import { escapeHtml } from '../../../domain/templates/render.ts';

/**
 * The pages people see from links in their email: small, self-contained HTML (one inline style
 * sheet, no scripts, no external assets), every inserted value escaped.
 */

/** A dictionary string with its `{name}` placeholders filled by escaped values, emphasised. */
export function fill(template: string, values: Record<string, string> = {}): string {
  return escapeHtml(template).replace(/\{(\w+)\}/g, (whole, name: string) =>
    name in values ? `<strong>${escapeHtml(values[name])}</strong>` : whole,
  );
}

const STYLE = [
  ':root{color-scheme:light dark}',
  'body{margin:0;padding:48px 16px;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;background:#f4f4f5;color:#18181b}',
  'main{max-width:480px;margin:0 auto;padding:32px;background:#fff;border-radius:12px;box-shadow:0 1px 3px rgba(0,0,0,.1)}',
  'h1{margin:0 0 16px;font-size:22px;line-height:1.3}',
  'p{margin:0 0 16px;overflow-wrap:anywhere}',
  '.muted{color:#52525b;font-size:14px}',
  'form{margin:24px 0 0}',
  'button{font:inherit;font-weight:600;padding:10px 20px;border:0;border-radius:8px;background:#18181b;color:#fff;cursor:pointer}',
  'button:focus-visible{outline:3px solid #60a5fa;outline-offset:2px}',
  '@media (prefers-color-scheme:dark){body{background:#18181b;color:#f4f4f5}main{background:#27272a;box-shadow:none}.muted{color:#a1a1aa}button{background:#f4f4f5;color:#18181b}}',
].join('');

/** The style sheet is allowed by its hash: nothing else may run or load on these pages. */
const CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** Headers of every page and of the tracking answers: never cached, never framed, no referrer. */
export function privateHeaders(res: Response): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Robots-Tag', 'noindex, nofollow');
}

export interface Form {
  /** Relative to the page, so the page works under any PUBLIC_URL path. */
  action: string;
  button: string;
  /** Hidden fields; the unsubscribe form sends the RFC 8058 body, as a mailbox provider does. */
  fields?: Record<string, string>;
}

export interface Page {
  language: Language;
  title: string;
  /** Paragraphs, already HTML (made with `fill`). */
  paragraphs: string[];
  /** A smaller note under the paragraphs, already HTML. */
  note?: string;
  form?: Form;
}

export function renderPage(page: Page): string {
  const form = page.form
    ? `<form method="post" action="${escapeHtml(page.form.action)}">${Object.entries(page.form.fields ?? {})
        .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
        .join('')}<button type="submit">${escapeHtml(page.form.button)}</button></form>`
    : '';
  return [
    '<!doctype html>',
    `<html lang="${escapeHtml(page.language)}">`,
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width,initial-scale=1">',
    '<meta name="robots" content="noindex,nofollow">',
    `<title>${escapeHtml(page.title)}</title>`,
    `<style>${STYLE}</style>`,
    '</head>',
    '<body>',
    '<main>',
    `<h1>${escapeHtml(page.title)}</h1>`,
    ...page.paragraphs.map((p) => `<p>${p}</p>`),
    page.note ? `<p class="muted">${page.note}</p>` : '',
    form,
    '</main>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

export function sendPage(res: Response, status: number, page: Page): void {
  privateHeaders(res);
  res.setHeader('Content-Security-Policy', CSP);
  res.status(status).type('text/html; charset=utf-8').send(renderPage(page));
}
