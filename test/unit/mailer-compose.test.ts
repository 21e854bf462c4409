// A body inlined once (CSS by juice) renders exactly as inlining each rendered email would.
import { compile } from 'html-to-text';
import juice from 'juice';
import { describe, expect, it } from 'vitest';
import { compose, fillText, inlineTemplate, textTemplate } from '../../apps/mailer/compose.ts';
import { emailLinks } from '../../domain/mail/links.ts';
import type { EmailDoc } from '../../domain/mail/outbound.ts';
import { renderTemplate, templateScope } from '../../domain/templates/render.ts';
import { emailDoc } from '../harness/emails.ts';

const STYLE = '<style>p { color: #222; } .big { font-size: 20px; } #top { margin: 0; } a.cta { color: red; } td { padding: 4px; }</style>';
const page = (body: string) => `<!doctype html><html><head><meta charset="utf-8">${STYLE}</head><body>${body}</body></html>`;

const VALUES: Record<string, unknown>[] = [
  { name: 'Ann', plan: 'pro', url: 'https://shop.example/a?b=1&c=2' },
  { name: `O'Brien & <Sons> "quoted"`, plan: 'big', url: 'javascript:alert(1)' },
  { name: '{{plan}}', plan: '', url: '' },
  { name: 'Zoë 🎉 ✓', plan: 'top', url: 'https://x.example/' },
  {},
];

/** The n-th email of a campaign with this body, to recipient r<n> with these template values. */
const campaignEmail = (id: string, n: number, html: string, subject: string, vars: Record<string, unknown>): EmailDoc =>
  emailDoc({ _id: id, projectId: 'p', contactId: `c${n}`, kind: 'marketing', source: 'campaign', to: `r${n}@x.example`, subject, html, vars: vars as EmailDoc['vars'] });

describe('inlining a body once (apps/mailer/compose.ts)', () => {
  it('renders as juice on each rendered email, for tags in text, in links and with fallbacks', () => {
    const bodies = [
      page('<p class="big">Hi {{name ?? there}},</p><p>Your plan: <b>{{plan}}</b>.</p>'),
      page('<p id="top"><a class="cta" href="{{url ?? https://shop.example}}" title="For {{name}}">Go</a></p><table><tr><td>{{plan ?? "none {yet}"}}</td></tr></table>'),
      page('<p>{{{name}}} and {{ unknown }} and {{name??"a}}b"}} {{ broken</p>'),
      '<p>No document around {{name}}</p><style>p{color:blue}</style>',
      page('<p>Nothing to render</p>'),
    ];
    for (const body of bodies) {
      const template = inlineTemplate(body);
      expect(template, body).not.toBeNull();
      for (const values of VALUES) {
        const scope = templateScope(values, { email: 'a@b.example' });
        expect(renderTemplate(template!, scope, 'html'), `${body} with ${JSON.stringify(values)}`).toBe(juice(renderTemplate(body, scope, 'html')));
      }
    }
  });

  it('leaves to per-email inlining a body whose tags CSS could see', () => {
    for (const body of [
      page('<p class="{{plan}}">x</p>'),
      page('<p id="{{name}}">x</p>'),
      page('<p style="color: {{color}}">x</p>'),
      page('<p {{attr}}="1">x</p>'),
      page('<{{tag}}>x</{{tag}}>'),
      `<style>.{{plan}} { color: red }</style><p class="pro">x</p>`,
      page('<!-- {{name}} --><p>x</p>'),
      page('<p><a href="https://x.example" title="{{name}}">x</a></p>'),
      page('<p><a href="https://x.example" title={{name}}>x</a></p>'),
    ]) {
      expect(inlineTemplate(body), body).toBeNull();
    }
  });

  it('gives every email of a repeated body the same HTML whichever way it was inlined', () => {
    const key = Buffer.alloc(32, 7);
    const html = page('<p class="big">Hi {{name ?? there}}</p><p><a class="cta" href="https://shop.example/{{plan}}">Shop</a></p>');
    const email = (n: number) => campaignEmail(`e${n}`, n, html, 'Hi {{name}}', VALUES[n % VALUES.length]);
    // First sight: per email. Second: inlined once and checked against per email. Then inlined.
    const first = [0, 1, 2, 3, 4].map((n) => compose(email(n), { subject: 'Hi {{name}}', html }, emailLinks('https://m.example', key, `e${n}`, `c${n}`)));
    const again = [0, 1, 2, 3, 4].map((n) => compose(email(n), { subject: 'Hi {{name}}', html }, emailLinks('https://m.example', key, `e${n}`, `c${n}`)));
    expect(again).toEqual(first);
    expect(first[1].html).toContain('O&#39;Brien &amp; &lt;Sons&gt;');
    expect(first[0].html).toMatch(/<p class="big" style="[^"]*font-size: 20px/);
  });
});

describe('the plain-text part of a body converted once (apps/mailer/compose.ts)', () => {
  const reference = compile({ wordwrap: false, selectors: [{ selector: 'img', format: 'skip' }] });
  const key = Buffer.alloc(32, 9);
  const values: Record<string, unknown>[] = [
    ...VALUES,
    { name: '  spaced   out ', plan: 'a\tb', url: '#top' },
    { name: 'two\nlines', plan: 'x\u200by', url: 'mailto:ann@shop.example' },
    { name: 'Ann', plan: '', url: 'https://shop.example/{{name}}' },
    { name: 'ß straße ǆ', plan: 'ﬁne', url: 'https://x.example/ü' },
  ];
  const email = (html: string, n: number) => campaignEmail(`t${n}`, n, html, 'Hi', values[n % values.length]);

  /** Bodies whose text is made once: tags in text, in a heading, in the middle of a link. */
  const fast = [
    page('<h1>Hi {{name ?? there}},</h1><p>Your plan: <b>{{plan}}</b>.</p><p><a href="https://shop.example/{{plan}}/x">Track</a></p>'),
    page('<h2>{{plan}}</h2><p>{{name}}</p><ul><li>{{plan ?? none}} item</li><li>{{name}}</li></ul><blockquote>{{name}} said</blockquote>'),
    page('<table><tr><td>{{name}}</td><td>{{plan}}</td></tr></table><pre>  {{name}}  </pre><p>{{name}}{{plan}}</p>'),
    page('<p>Nothing to render</p>'),
  ];

  it('is made once with a place for each value, and filled it is what html-to-text makes of the rendered email', () => {
    const normal = [{ name: 'Ann', plan: 'pro' }, { name: `O'Brien & <Sons>`, plan: 'Zoë 🎉' }, { name: 'ß straße ǆ', plan: 'ﬁne' }];
    for (const html of fast) {
      const text = textTemplate(inlineTemplate(html)!);
      expect(text, html).not.toBeNull();
      for (const vars of [...normal, ...values]) {
        const scope = templateScope(vars, {});
        const filled = fillText(text!, scope);
        // Values html-to-text would change (whitespace, empty) are left to it; every normal one fills.
        if (normal.includes(vars as never)) expect(filled, `${html} with ${JSON.stringify(vars)}`).toBeDefined();
        if (filled !== undefined) expect(filled, `${html} with ${JSON.stringify(vars)}`).toBe(reference(juice(renderTemplate(html, scope, 'html'))));
      }
    }
    // A tag that starts a link (html-to-text drops "#…" and strips "mailto:"), or one it leaves out.
    for (const html of [page('<p><a href="{{url}}">Go</a></p>'), page('<p><a href=" {{url}}/x">Go</a></p>'), page('<p title="{{name}}">x</p>')]) {
      expect(textTemplate(html), html).toBeNull();
    }
  });

  it('is what html-to-text makes of each rendered email, whatever the values and wherever the tags are', () => {
    const bodies = [
      ...fast,
      page('<p><a href="{{url}}">{{name}}</a> and <a href="{{url ?? https://shop.example}}">shop</a></p>'),
      page('<h3 title="{{name}}">Plain</h3><p>No tag <img alt="{{name}}" src="https://x.example/i.png"> here</p>'),
    ];
    for (const html of bodies) {
      // Four rounds: first sight, inlined and checked, text made and checked, then the fast way.
      for (let round = 0; round < 4; round++) {
        values.forEach((_, n) => {
          const composed = compose(email(html, n), { subject: 'Hi', html }, emailLinks('https://m.example', key, `t${n}`, `c${n}`));
          const scope = templateScope(values[n], { id: `c${n}`, email: `r${n}@x.example` });
          expect(composed.text, `round ${round}: ${html} with ${JSON.stringify(values[n])}`).toBe(reference(juice(renderTemplate(html, scope, 'html'))));
        });
      }
    }
  });
});
