// The footer of marketing email (domain/mail/footer.ts) and where compose puts it.
import { describe, expect, it } from 'vitest';
import { compose } from '../../apps/mailer/compose.ts';
import { carriesUnsubscribeLink, footerFor, withFooter, type FooterSettings } from '../../domain/mail/footer.ts';
import { emailLinks } from '../../domain/mail/links.ts';
import type { EmailDoc, EmailKind } from '../../domain/mail/outbound.ts';
import { emailDoc } from '../harness/emails.ts';

const project: FooterSettings = { name: 'Shop <&> Co', language: 'fr', address: '1 Main St\n<b>Springfield</b>' };
const links = emailLinks('https://m.example', Buffer.alloc(32, 1), 'e1', 'c1');
const body = '<p>Hello</p>';

const email = (kind: EmailKind, vars: EmailDoc['vars'] = {}): EmailDoc => emailDoc({ _id: 'e1', contactId: 'c1', kind, status: 'SENDING', vars });

describe('the footer of marketing email', () => {
  it('goes on marketing email only, and not when the project turned it off', () => {
    expect(footerFor('marketing', project, undefined, links, body)).not.toBeNull();
    expect(footerFor('marketing', { ...project, footer: true }, undefined, links, body)).not.toBeNull();
    expect(footerFor('transactional', project, undefined, links, body)).toBeNull();
    expect(footerFor('system', project, undefined, links, body)).toBeNull();
    expect(footerFor('marketing', { ...project, footer: false }, undefined, links, body)).toBeNull();
    expect(footerFor('marketing', null, undefined, links, body)).toBeNull();
  });

  it('is left off a body that already offers the unsubscribe link, escaped or as written', () => {
    const url = 'https://m.example/unsubscribe/c1.x?a=1&b=2';
    expect(carriesUnsubscribeLink(`<a href="https://m.example/unsubscribe/c1.x?a=1&amp;b=2">x</a>`, url)).toBe(true);
    expect(carriesUnsubscribeLink(`Unsubscribe: ${url}`, url)).toBe(true);
    expect(carriesUnsubscribeLink('<a href="https://m.example/manage/c1.x">x</a>', url)).toBe(false);
    expect(footerFor('marketing', project, undefined, links, `<a href="${links.unsubscribeUrl}">stop</a>`)).toBeNull();
  });

  it("speaks the contact's locale, else the project's language, else English", () => {
    expect(footerFor('marketing', project, 'de', links, body)?.language).toBe('de');
    expect(footerFor('marketing', project, 'DE', links, body)?.language).toBe('de');
    expect(footerFor('marketing', project, 'xx', links, body)?.language).toBe('fr');
    expect(footerFor('marketing', project, undefined, links, body)?.language).toBe('fr');
    expect(footerFor('marketing', { ...project, language: 'xx' }, 42, links, body)?.language).toBe('en');
    expect(footerFor('marketing', project, 'es', links, body)?.text).toContain(`Cancelar suscripción: ${links.unsubscribeUrl}`);
  });

  it('holds both links and the address, every value escaped in the HTML and as written in the text', () => {
    const footer = footerFor('marketing', project, 'en', links, body)!;
    expect(footer.html).toContain(`<a href="${links.unsubscribeUrl}"`);
    expect(footer.html).toContain(`<a href="${links.manageUrl}"`);
    expect(footer.html).toContain('subscribed to Shop &lt;&amp;&gt; Co.');
    expect(footer.html).toContain('1 Main St<br>&lt;b&gt;Springfield&lt;/b&gt;');
    expect(footer.html).not.toContain('<b>');
    expect(footer.text).toBe(
      [
        'You are receiving this email because you are subscribed to Shop <&> Co.',
        `Unsubscribe: ${links.unsubscribeUrl}`,
        `Email preferences: ${links.manageUrl}`,
        '1 Main St',
        '<b>Springfield</b>',
      ].join('\n'),
    );
    expect(footerFor('marketing', { ...project, address: '  ' }, 'en', links, body)!.text.split('\n')).toHaveLength(3);
    expect(footerFor('marketing', { ...project, name: "Dollar $& $' Co" }, 'en', links, body)!.text).toContain("subscribed to Dollar $& $' Co.");
  });

  it('is appended inside the document: before </body>, or at the end, and after the text', () => {
    const footer = { language: 'en' as const, html: '<div>F</div>', text: 'F' };
    expect(withFooter({ html: '<html><BODY><p>a</p></BODY></html>', text: 'a\n\n' }, footer)).toEqual({ html: '<html><BODY><p>a</p><div>F</div></BODY></html>', text: 'a\n\n---\nF' });
    expect(withFooter({ html: '<p>a</p>', text: 'a' }, footer).html).toBe('<p>a</p><div>F</div>');
    expect(withFooter({ html: '<p>a</p>', text: 'a' }, null)).toEqual({ html: '<p>a</p>', text: 'a' });
  });

  it('compose adds it after rendering: its links are not tracked, no template value reaches it, and it comes once', () => {
    const composed = compose(email('marketing', { locale: 'de', name: '</div><div style="display:none">' }), { subject: 's', html: '<p>Hi {{name}}</p>' }, links, project);
    expect(composed.html).toContain(`<a href="${links.unsubscribeUrl}"`); // the page itself, not a /t/click/ redirect
    expect(composed.html).toContain('Sie erhalten diese E-Mail');
    expect(composed.html.indexOf('Sie erhalten')).toBeLessThan(composed.html.indexOf('/t/open/')); // the pixel stays last
    expect(composed.html).not.toContain('<div style="display:none">');
    expect(composed.text).toContain(`Abmelden: ${links.unsubscribeUrl}`);

    const own = compose(email('marketing', { locale: 'de' }), { subject: 's', html: '<a href="{{unsubscribeUrl}}">stop</a>' }, links, project);
    expect(own.html.split(links.unsubscribeUrl)).toHaveLength(2);
    expect(own.html).not.toContain('Sie erhalten');
    expect(compose(email('transactional', { locale: 'de' }), { subject: 's', html: body }, links, project).html).not.toContain('Sie erhalten');
  });

  it("a template's unclosed markup cannot swallow it: the rendered body is whole before the footer comes", () => {
    const cases: [string, string][] = [
      ['<div style="display:none"><p>x', '<div style="display:none"><p>x</p></div><div lang="en"'],
      ['<p>x <!-- y', '<p>x <!-- y--></p><div lang="en"'],
      ['<table><tr><td>x', '<table><tr><td>x</td></tr></table><div lang="en"'],
    ];
    for (const [html, start] of cases) {
      // Three times: the first email of a body, the check of its cached inlining, and the cached path.
      for (let n = 0; n < 3; n++) expect(compose(email('marketing'), { subject: 's', html }, links, { ...project, language: 'en' }).html, html).toContain(start);
    }
  });
});
