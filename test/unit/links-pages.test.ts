// The language rule and the dictionary of the subscription pages (domain/mail/pages-i18n.ts),
// and the page renderer (apps/api/public/html.ts): escaping and self-containment.
import { describe, expect, it } from 'vitest';
import { fill, renderPage } from '../../apps/api/public/html.ts';
import { escapeHtml } from '../../domain/templates/render.ts';
import { LANGUAGES, languageFromAcceptLanguage, pageLanguage, stringsFor } from '../../domain/mail/pages-i18n.ts';

describe('pageLanguage', () => {
  it('takes the contact locale, then the project language, then English; only shipped languages count', () => {
    expect(pageLanguage('de', 'fr')).toBe('de');
    expect(pageLanguage('ES', 'fr')).toBe('es');
    expect(pageLanguage('ja', 'fr')).toBe('fr');
    expect(pageLanguage(undefined, 'es')).toBe('es');
    expect(pageLanguage(42, 'de')).toBe('de');
    expect(pageLanguage('ja', 'ja')).toBe('en');
    expect(pageLanguage(undefined, undefined)).toBe('en');
    expect(pageLanguage('toString', 'constructor')).toBe('en');
  });
});

describe('languageFromAcceptLanguage', () => {
  it('picks the preferred shipped language by q-value, then order', () => {
    expect(languageFromAcceptLanguage('fr-CA,fr;q=0.9,en;q=0.8')).toBe('fr');
    expect(languageFromAcceptLanguage('ja, de;q=0.5, es;q=0.7')).toBe('es');
    expect(languageFromAcceptLanguage('de;q=0, es')).toBe('es');
    expect(languageFromAcceptLanguage('ja, zh')).toBe('en');
    expect(languageFromAcceptLanguage('*')).toBe('en');
    expect(languageFromAcceptLanguage('deu, de-AT')).toBe('de');
    expect(languageFromAcceptLanguage(undefined)).toBe('en');
    expect(languageFromAcceptLanguage('')).toBe('en');
  });
});

describe('dictionary', () => {
  const placeholders = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

  it('ships English, German, French and Spanish', () => {
    expect([...LANGUAGES].sort()).toEqual(['de', 'en', 'es', 'fr']);
  });

  it('has every string in every language, non-empty, with the same placeholders as English', () => {
    const en = stringsFor('en');
    for (const language of LANGUAGES) {
      const strings = stringsFor(language);
      expect(Object.keys(strings).sort()).toEqual(Object.keys(en).sort());
      for (const [name, text] of Object.entries(strings) as [keyof typeof en, string][]) {
        expect(text.trim(), `${language}.${name}`).not.toBe('');
        expect(placeholders(text), `${language}.${name}`).toEqual(placeholders(en[name]));
        if (language !== 'en') expect(text, `${language}.${name} is translated`).not.toBe(en[name]);
      }
    }
  });
});

describe('page rendering', () => {
  const hostile = `<script>alert('x')</script>"&`;

  it('escapes values inserted into dictionary strings, and the strings themselves', () => {
    expect(escapeHtml(hostile)).toBe('&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;');
    expect(fill('Unsubscribe {email} from {project}?', { email: "o'neil@x.example", project: hostile })).toBe(
      'Unsubscribe <strong>o&#39;neil@x.example</strong> from <strong>&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;</strong>?',
    );
    expect(fill('A & B {missing}')).toBe('A &amp; B {missing}');
    // A value that looks like a placeholder is not filled again.
    expect(fill('{email} / {project}', { email: '{project}', project: 'P' })).toBe('<strong>{project}</strong> / <strong>P</strong>');
  });

  it('renders a self-contained page: one inline style sheet, no scripts or external assets', () => {
    const html = renderPage({
      language: 'de',
      title: hostile,
      paragraphs: [fill('{email}', { email: hostile })],
      note: fill('note'),
      form: { action: `/unsubscribe/${hostile}`, button: hostile, fields: { [hostile]: hostile } },
    });
    expect(html.startsWith('<!doctype html>\n<html lang="de">')).toBe(true);
    expect(html).not.toContain('<script');
    expect(html).not.toMatch(/\bsrc=|<link|url\(|@import/i);
    expect(html.match(/<style>/g)).toHaveLength(1);
    expect(html).toContain('<form method="post" action="/unsubscribe/&lt;script&gt;');
    expect(html).toContain('<meta charset="utf-8">');
  });

  it('leaves the form out when there is none', () => {
    expect(renderPage({ language: 'en', title: 'T', paragraphs: ['p'] })).not.toContain('<form');
  });
});
