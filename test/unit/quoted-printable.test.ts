// The mailer's quoted-printable encoder makes exactly what nodemailer's makes (the one it
// replaced on the hot path), on generated text of every kind a part can hold.
import { encode as nodemailerEncode, wrap as nodemailerWrap } from 'nodemailer/lib/qp';
import { describe, expect, it } from 'vitest';
import { encode, quotedPrintable, quotedPrintableBytes, wrap } from '../../apps/mailer/quoted-printable.ts';
import { mulberry32 } from '../harness/prng.ts';

/** Pieces text is made of: words, the characters QP treats specially, line ends of every kind, non-ASCII. */
const PIECES = [
  'a', 'word', 'Hello', 'x'.repeat(90), '0123456789ABCDEFabcdef', ' ', '  ', '\t', '=', '==', '=3D', '=A', '.', ',', '!', '?',
  '<a href="https://shop.example/t/click/abc.def?u=https%3A%2F%2Fx">', '\r\n', '\r\n\r\n', '\n', '\r', ' \r\n', '\t\r\n',
  'é', 'ü', '–', '€', '日本語', '😀', '\ud800', '\udc00', '\u2028', '\u0000', '\u007f', '\u0080', '\u00ff', '&nbsp;',
];

/** Code point ranges by UTF-8 length (1 to 4 bytes), and the surrogates (alone, U+FFFD in UTF-8). */
const CODE_POINTS = [[0, 0x80], [0x80, 0x800], [0x800, 0xd800], [0xd800, 0xe000], [0xe000, 0x10000], [0x10000, 0x110000]];

function text(random: () => number): string {
  const parts: string[] = [];
  const n = Math.floor(random() * 120);
  for (let i = 0; i < n; i++) {
    // Now and then any code point at all (every UTF-8 length, lone surrogates included).
    const [from, to] = CODE_POINTS[Math.floor(random() * CODE_POINTS.length)];
    const any = random() < 0.1 ? String.fromCodePoint(from + Math.floor(random() * (to - from))) : undefined;
    parts.push(any ?? PIECES[Math.floor(random() * PIECES.length)]);
  }
  return parts.join('');
}

describe('quoted-printable', () => {
  it('encodes and wraps exactly as nodemailer does, on 20,000 generated texts', () => {
    const random = mulberry32(15);
    for (let i = 0; i < 20_000; i++) {
      const value = text(random);
      const expected = nodemailerWrap(nodemailerEncode(value), 76);
      const got = quotedPrintable(value);
      if (got !== expected) expect({ value, got }).toEqual({ value, got: expected });
    }
  });

  it('encodes as nodemailer does, and wraps any text (not only encoded text) as it does', () => {
    const random = mulberry32(16);
    for (let i = 0; i < 20_000; i++) {
      const value = text(random);
      expect(encode(value)).toBe(nodemailerEncode(value));
      for (const width of [4, 20, 76]) {
        const got = wrap(value, width);
        if (got !== nodemailerWrap(value, width)) expect({ value, width, got }).toEqual({ value, width, got: nodemailerWrap(value, width) });
      }
    }
  });

  it('makes line by line, from the lines it kept or not, the bytes of the whole text made CRLF', () => {
    const random = mulberry32(17);
    const crlf = (value: string) => value.replace(/\r?\n|\r/g, '\r\n');
    // Texts of a few bodies (of 4 to 15 lines), each with lines of its own here and there, as a
    // campaign's emails are.
    const bodies = Array.from({ length: 12 }, (_, b) => Array.from({ length: 4 + b }, () => text(random).replace(/[\r\n]/g, '')));
    const made = new Set<Buffer>();
    let taken = 0;
    let lines = 0;
    for (let i = 0; i < 20_000; i++) {
      const body = bodies[Math.floor(random() * bodies.length)];
      const own = body.map((line) => (random() < 0.2 ? text(random).replace(/[\r\n]/g, '') : line));
      // Now and then a text of any kind: any line ends, none at all, CR alone.
      const value = random() < 0.1 ? text(random) : own.join('\n');
      const expected = quotedPrintable(crlf(value));
      const parts = quotedPrintableBytes(value);
      const got = Buffer.concat(parts).toString('latin1');
      if (got !== expected) expect({ value, got }).toEqual({ value, got: expected });
      for (const part of parts) {
        if (made.has(part)) taken++;
        made.add(part);
      }
      lines += parts.length;
    }
    // Most lines' bytes were taken from an earlier text, not made again.
    expect(taken / lines).toBeGreaterThan(0.5);
  });

  it('keeps no part of megabytes (an HTML part with images inlined) for the next email', () => {
    const big = Array.from({ length: 30_000 }, (_, i) => `<p>line ${i % 7} ${'x'.repeat(90)}</p>`).join('\n');
    const small = big.slice(0, 10_000);
    for (const [value, reused] of [[big, false], [small, true]] as const) {
      const first = quotedPrintableBytes(value);
      const again = quotedPrintableBytes(value);
      expect(again.slice(0, -1).every((part, i) => part === first[i])).toBe(reused);
    }
  });

  it('keeps every line within 76 characters and decodes back to the text', () => {
    const value = `<p style="color: red">Caf\u00e9 \u2013 ${'long words '.repeat(40)}</p> \r\nend\t`;
    const encoded = quotedPrintable(value);
    for (const line of encoded.split('\r\n')) expect(line.length).toBeLessThanOrEqual(76);
    const decoded = Buffer.from(
      encoded.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
      'latin1',
    ).toString('utf8');
    expect(decoded).toBe(value);
  });
});
