// The template engine as a pure function: tags, fallbacks, escaping, safety and parsing edge cases.
import { describe, expect, it } from 'vitest';
import {
  escapeHtml,
  parseTemplate,
  renderTemplate,
  SYSTEM_VARIABLES,
  templateScope,
  templateVariables,
} from '../../domain/templates/render.ts';

const html = (source: string, vars: Record<string, unknown> = {}) => renderTemplate(source, vars, 'html');
const text = (source: string, vars: Record<string, unknown> = {}) => renderTemplate(source, vars, 'text');

describe('substitution', () => {
  it('inserts values by name, in both modes', () => {
    const vars = { firstName: 'Ann', plan: 'pro' };
    expect(html('<p>Hi {{firstName}}, you are on {{plan}}.</p>', vars)).toBe('<p>Hi Ann, you are on pro.</p>');
    expect(text('Hi {{firstName}}', vars)).toBe('Hi Ann');
  });

  it('tolerates whitespace (spaces, tabs, newlines) inside the braces', () => {
    const vars = { name: 'Ann' };
    for (const tag of ['{{name}}', '{{ name }}', '{{   name\t}}', '{{\n  name\n}}']) expect(html(tag, vars), tag).toBe('Ann');
  });

  it('renders numbers, booleans, zero and false as text', () => {
    expect(text('{{n}} {{z}} {{f}} {{t}} {{x}}', { n: 42.5, z: 0, f: false, t: true, x: -1 })).toBe('42.5 0 false true -1');
  });

  it('renders a Date as ISO 8601', () => {
    expect(text('{{d}}', { d: new Date('2024-05-01T10:00:00.000Z') })).toBe('2024-05-01T10:00:00.000Z');
  });

  it('renders an unknown variable without fallback as nothing', () => {
    expect(html('Hi {{nobody}}!', {})).toBe('Hi !');
    expect(text('[{{ nobody }}]', { somebody: 'x' })).toBe('[]');
  });

  it('renders objects, arrays and functions as missing, never as [object Object] or code', () => {
    const vars = { o: { a: 1 }, arr: [1, 2], fn: () => 'ran', sym: Symbol('s') };
    expect(text('[{{o}}][{{arr}}][{{fn}}][{{sym}}]', vars)).toBe('[][][][]');
    expect(text('{{o ?? none}}', vars)).toBe('none');
  });

  it('replaces every occurrence and leaves text without tags untouched', () => {
    expect(text('{{a}}-{{a}}-{{b}}', { a: 1, b: 2 })).toBe('1-1-2');
    const plain = '<html><body style="color:red">No tags { here } at all</body></html>';
    expect(html(plain)).toBe(plain);
    expect(html('')).toBe('');
  });

  it('accepts every name character: letters, digits, underscore, dot and dash', () => {
    const vars = { first_name: 'a', 'last-name': 'b', 'x.y': 'c', ABC123: 'd', '9': 'e' };
    expect(text('{{first_name}}{{last-name}}{{x.y}}{{ABC123}}{{9}}', vars)).toBe('abcde');
  });

  it('never re-reads an inserted value as template text', () => {
    expect(html('{{a}}', { a: '{{b}}', b: 'no' })).toBe('{{b}}');
    expect(text('{{a}}', { a: '{{b ?? x}}' })).toBe('{{b ?? x}}');
  });
});

describe('fallbacks', () => {
  it('uses the fallback when the value is missing, null, undefined or the empty string', () => {
    const vars = { nul: null, undef: undefined, empty: '' };
    expect(text('{{missing ?? friend}}', vars)).toBe('friend');
    expect(text('{{nul ?? friend}}', vars)).toBe('friend');
    expect(text('{{undef ?? friend}}', vars)).toBe('friend');
    expect(text('{{empty ?? friend}}', vars)).toBe('friend');
  });

  it('keeps a present value, including 0, false and whitespace', () => {
    expect(text('{{z ?? x}}|{{f ?? x}}|{{s ?? x}}|{{v ?? x}}', { z: 0, f: false, s: ' ', v: 'Ann' })).toBe('0|false| |Ann');
  });

  it('takes a bare fallback with spaces, trimmed, with or without whitespace around ??', () => {
    expect(text('Dear {{ name ?? valued customer }},', {})).toBe('Dear valued customer,');
    expect(text('{{name??there}}', {})).toBe('there');
    expect(text('{{name ??there}}|{{name?? there  }}', {})).toBe('there|there');
    expect(text('{{ name ?? a, b & c: d! }}', {})).toBe('a, b & c: d!');
  });

  it('takes a quoted fallback with single or double quotes, keeping inner spaces and braces', () => {
    expect(text(`{{ name ?? 'my friend' }}`, {})).toBe('my friend');
    expect(text(`{{ name ?? "my friend" }}`, {})).toBe('my friend');
    expect(text(`{{ name ?? "  padded  " }}`, {})).toBe('  padded  ');
    expect(text(`{{ name ?? "it's" }}`, {})).toBe("it's");
    expect(text(`{{ name ?? 'say "hi"' }}`, {})).toBe('say "hi"');
    expect(text(`{{ name ?? '{ } }}' }}`, {})).toBe('{ } }}');
    expect(text(`{{ name ?? '' }}|{{ name ?? }}`, {})).toBe('|');
  });

  it('escapes the fallback in html mode like any inserted value', () => {
    expect(html('{{ company ?? Smith & Sons }}', {})).toBe('Smith &amp; Sons');
    expect(html(`{{ x ?? '<b>"hi"</b>' }}`, {})).toBe('&lt;b&gt;&quot;hi&quot;&lt;/b&gt;');
  });

  it('a tag with a malformed fallback is literal text', () => {
    for (const source of [
      `{{ name ?? 'unterminated }}`,
      `{{ name ?? "unterminated }}`,
      `{{ name ?? 'quoted' trailing }}`,
      '{{ name ?? has { brace }}',
      '{{ name ?? line\nbreak }}',
      '{{ name ? single }}',
      '{{ name ?? a ?? b }',
    ]) {
      expect(text(source, { name: 'Ann' }), source).toBe(source);
    }
  });
});

describe('html mode escaping', () => {
  it('escapes & < > " and \' in values', () => {
    expect(html('{{v}}', { v: `& < > " '` })).toBe('&amp; &lt; &gt; &quot; &#39;');
    expect(escapeHtml('a&b')).toBe('a&amp;b');
  });

  it('neutralises a <script> value', () => {
    const out = html('<p>{{name}}</p>', { name: '<script>alert(1)</script>' });
    expect(out).toBe('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
    expect(out).not.toContain('<script');
  });

  it('a value cannot break out of a quoted attribute', () => {
    expect(html('<a href="{{url}}">x</a>', { url: '" onmouseover="alert(1)' })).toBe(
      '<a href="&quot; onmouseover=&quot;alert(1)">x</a>',
    );
    expect(html("<img alt='{{alt}}'>", { alt: "' onerror='alert(1)" })).toBe("<img alt='&#39; onerror=&#39;alert(1)'>");
  });

  it("& in a value is always escaped; the template's own entities and markup never are", () => {
    expect(html('<b class="x">&amp; {{v}}</b>', { v: '&amp;' })).toBe('<b class="x">&amp; &amp;amp;</b>');
  });
});

describe('text mode', () => {
  it('does not escape HTML characters', () => {
    expect(text('Re: {{v}}', { v: `<b> & "q" 'a'` })).toBe(`Re: <b> & "q" 'a'`);
  });

  it('turns CR, LF, CRLF and Unicode line breaks in values into one space each (no header injection)', () => {
    const out = text('Subject {{v}}', { v: 'Hi\r\nBcc: victim@example.com\nX\rY\u2028Z\u2029W\u0085V' });
    expect(out).toBe('Subject Hi Bcc: victim@example.com X Y Z W V');
    expect(out).not.toMatch(/[\r\n]/);
  });

  it('flattens line breaks in a fallback too, and keeps the template own line breaks', () => {
    expect(text(`{{ v ?? "a\nb" }}`, {})).toBe('a b');
    expect(text('line1\n{{v}}', { v: 'x' })).toBe('line1\nx');
  });

  it('html mode keeps line breaks of values (HTML does not care)', () => {
    expect(html('{{v}}', { v: 'a\nb' })).toBe('a\nb');
  });
});

describe('no code, no prototypes', () => {
  it('renders prototype members as missing', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty', 'prototype', '__defineGetter__']) {
      expect(html(`[{{${name}}}]`, { a: 1 }), name).toBe('[]');
      expect(text(`{{${name} ?? none}}`, {}), name).toBe('none');
    }
  });

  it('does not walk into prototypes along a dotted path', () => {
    const vars = { user: { name: 'Ann' } };
    for (const name of ['user.constructor', 'user.__proto__', 'user.constructor.name', 'user.toString', 'constructor.name', 'user.name.length']) {
      expect(text(`[{{${name}}}]`, vars), name).toBe('[]');
    }
  });

  it('reads an own key named like a prototype member, as data', () => {
    const vars = JSON.parse('{"constructor":"Bob the Builder","__proto__":"own"}');
    expect(text('{{constructor}} {{__proto__}}', vars)).toBe('Bob the Builder own');
  });

  it('never runs a getter', () => {
    let calls = 0;
    const vars = Object.defineProperty({}, 'secret', { enumerable: true, get: () => (++calls, 'leaked') });
    expect(text('[{{secret}}]', vars)).toBe('[]');
    expect(calls).toBe(0);
  });

  it('does not evaluate anything that looks like code', () => {
    const sources = ['{{1+1}}', '{{ a() }}', '{{ this }}', '{{ process.env }}', '{{ globalThis }}', '{{ `x` }}', '{{a[0]}}'];
    const out = sources.map((s) => text(s, { a: ['x'] }));
    expect(out).toEqual(['{{1+1}}', '{{ a() }}', '', '', '', '{{ `x` }}', '{{a[0]}}']);
  });
});

describe('dotted names', () => {
  it('looks a dotted name up as a flat key first', () => {
    expect(text('{{company.name}}', { 'company.name': 'flat', company: { name: 'nested' } })).toBe('flat');
  });

  it('then as a path through plain objects', () => {
    expect(text('{{company.name}} {{a.b.c}}', { company: { name: 'Acme' }, a: { b: { c: 3 } } })).toBe('Acme 3');
    expect(text('[{{company.missing}}][{{company.name.x}}]', { company: { name: 'Acme' } })).toBe('[][]');
  });

  it('does not walk into arrays or class instances', () => {
    class Box {
      v = 'inside';
    }
    expect(text('[{{arr.0}}][{{box.v}}]', { arr: ['x'], box: new Box() })).toBe('[][]');
  });
});

describe('parsing edge cases', () => {
  it('nested braces: the innermost valid tag renders, outer braces are literal', () => {
    expect(text('{{{name}}}', { name: 'Ann' })).toBe('{Ann}');
    expect(text('{{{{name}}}}', { name: 'Ann' })).toBe('{{Ann}}');
    expect(text('{{ {{name}} }}', { name: 'Ann' })).toBe('{{ Ann }}');
  });

  it('unbalanced braces stay literal text', () => {
    const vars = { name: 'Ann' };
    expect(text('{{name}', vars)).toBe('{{name}');
    expect(text('{name}}', vars)).toBe('{name}}');
    expect(text('{{name', vars)).toBe('{{name');
    expect(text('name}}', vars)).toBe('name}}');
    expect(text('{{name}}}', vars)).toBe('Ann}');
    expect(text('{{', vars)).toBe('{{');
    expect(text('}}{{', vars)).toBe('}}{{');
    expect(text('{{ name }} and {{ name', vars)).toBe('Ann and {{ name');
    expect(text('{{{', vars)).toBe('{{{');
  });

  it('an empty tag or an invalid name is literal text', () => {
    for (const source of ['{{}}', '{{ }}', '{{first name}}', '{{na$me}}', '{{ná}}', '{{ ?? x }}', '{{"name"}}', '{{name!}}']) {
      expect(text(source, { name: 'Ann', first: 'F' }), source).toBe(source);
    }
  });

  it('a tag over several lines works; literal text around it is kept byte for byte', () => {
    expect(html('<p>\n  {{\n    name ?? "x"\n  }}\n</p>', { name: 'Ann' })).toBe('<p>\n  Ann\n</p>');
  });

  it('parses into literal text and tags', () => {
    expect(parseTemplate(`Hi {{ name ?? 'you' }}! {{x}}`)).toEqual([
      'Hi ',
      { name: 'name', fallback: 'you', raw: `{{ name ?? 'you' }}` },
      '! ',
      { name: 'x', fallback: null, raw: '{{x}}' },
    ]);
  });

  it('stays fast on hostile input (linear, no backtracking blow-up)', () => {
    const hostile = [
      `{{a ?? '`.repeat(50_000),
      `{{a ?? ${' '.repeat(500_000)}`,
      '{{'.repeat(200_000),
      `{{ ${'a'.repeat(500_000)}`,
      `{{a ?? "x"${' '.repeat(200_000)}{{a ?? "${' '.repeat(200_000)}`,
    ];
    const started = performance.now();
    for (const source of hostile) expect(text(source, { a: 'x' })).toBe(source);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('templateVariables', () => {
  it('lists the distinct names used, in order of first use, with and without fallbacks', () => {
    expect(templateVariables('{{b}} {{ a ?? x }} {{b}} {{c.d}} {{unsubscribeUrl}}')).toEqual(['b', 'a', 'c.d', 'unsubscribeUrl']);
  });

  it('ignores text that is not a tag', () => {
    expect(templateVariables('{{}} {{bad name}} {name} {{ok}} {{x ?? "open }}')).toEqual(['ok']);
    expect(templateVariables('no tags')).toEqual([]);
  });
});

describe('templateScope: system variables', () => {
  const system = {
    id: 'c1',
    email: 'ann@example.com',
    unsubscribeUrl: 'https://x/u',
    subscribeUrl: 'https://x/s',
    manageUrl: 'https://x/m',
  };

  it('offers the five system variables', () => {
    expect([...SYSTEM_VARIABLES]).toEqual(['id', 'email', 'unsubscribeUrl', 'subscribeUrl', 'manageUrl']);
    const scope = templateScope({ plan: 'pro' }, system);
    expect(text('{{id}} {{email}} {{unsubscribeUrl}} {{subscribeUrl}} {{manageUrl}} {{plan}}', scope)).toBe(
      'c1 ann@example.com https://x/u https://x/s https://x/m pro',
    );
  });

  it('system variables win over data keys of the same name', () => {
    const data = { id: 'fake', email: 'evil@example.com', unsubscribeUrl: 'https://evil', name: 'Ann' };
    const scope = templateScope(data, system);
    expect(text('{{id}}|{{email}}|{{unsubscribeUrl}}|{{name}}', scope)).toBe('c1|ann@example.com|https://x/u|Ann');
  });

  it('a system variable the caller does not give falls back to nothing, or to a data key', () => {
    expect(text('[{{manageUrl}}][{{id}}]', templateScope({ id: 'data-id' }, { email: 'a@b.c' }))).toBe('[][data-id]');
  });

  it('has no prototype and copies only own data properties', () => {
    const data = Object.create({ inherited: 'no' });
    data.own = 'yes';
    const scope = templateScope(data, {});
    expect(Object.getPrototypeOf(scope)).toBeNull();
    expect(text('{{own}}[{{inherited}}][{{toString}}]', scope)).toBe('yes[][]');
    expect(templateScope(undefined, {})).toEqual({});
  });
});
