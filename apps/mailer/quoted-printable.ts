/**
 * Quoted-printable (RFC 2045 §6.7) for the two parts of every email (mime.ts): the same text,
 * character for character, as nodemailer's `wrap(encode(value), 76)` (its rules, its line breaks),
 * which test/unit/quoted-printable.test.ts checks on generated inputs. Ours because it pays:
 * nodemailer encodes through Buffers a byte at a time and cuts each line out with substr and
 * regular expressions: 26 µs of the sending thread for the two parts of the benchmark's campaign
 * email, against 14 µs here (bench/results/campaign-profile.md, session 19). mime.ts takes it line
 * by line (quotedPrintableBytes), reusing the bytes of lines the last email of a body had.
 */

import { SizedCache } from '../../runtime/sized-cache.ts';

/** The QP body of `value`, in lines of at most 76 characters. */
export function quotedPrintable(value: string): string {
  return wrap(encode(value), 76);
}

/**
 * `quotedPrintable(value)` with its line ends made CRLF, as bytes (QP is ASCII), made line by
 * line: a CRLF ends every line and no escape or wrap crosses it, so each line comes out as it does
 * in the whole text, the last one excepted (the whole text's wrap skips a text that fits one line,
 * not a last line that fits). A campaign's emails share most of their lines (only those with the
 * recipient's values and links differ), so the lines of the last text with as many lines are kept
 * with their bytes, and a line equal to the one in its place there takes its bytes as they are: a
 * comparison where encoding, wrapping and writing the bytes took many passes over it.
 */
export function quotedPrintableBytes(value: string): Buffer[] {
  if (value.includes('\r')) return [Buffer.from(quotedPrintable(value.replace(/\r?\n|\r/g, '\r\n')), 'latin1')];
  const lines = value.split('\n');
  const last = lines.length - 1;
  const before = previous.get(lines.length);
  const bytes: Buffer[] = [];
  let length = 0;
  let same = 0;
  for (let i = 0; i < last; i++) {
    if (before && before.lines[i] === lines[i]) {
      bytes.push(before.bytes[i]);
      same++;
    } else {
      bytes.push(Buffer.from(wrap(encode(`${lines[i]}\r\n`), 76), 'latin1'));
    }
    length += bytes[i].length;
  }
  const end = encode(lines[last]);
  bytes.push(Buffer.from(length + end.length > 76 ? wrapLines(end, 76) : end, 'latin1'));
  // The first text of a body, or one sharing less than half its lines with the one kept, is kept instead.
  if (!before || same * 2 < last) previous.set(lines.length, { lines, bytes, size: value.length + length + end.length });
  return bytes;
}

interface Kept {
  lines: string[];
  bytes: Buffer[];
  /** Its characters and bytes: what keeping it holds (the lines are slices of the text). */
  size: number;
}

/**
 * The lines and bytes of the last text made, by its number of lines: a few bodies at once, 8 MB
 * at most, and none over a quarter of that (an HTML part with images inlined can be megabytes).
 */
const KEPT_SIZE = 8 * 1024 * 1024;
const previous = new SizedCache<number, Kept>(64, KEPT_SIZE, (text) => text.size, KEPT_SIZE / 4);

/**
 * What is written as `=XX`: runs of characters outside tab, CR, LF, space to `<` and `>` to `~`
 * (`=` itself, and all of non-ASCII, by its UTF-8 bytes), and a space or tab that ends a line or
 * the value.
 */
const ENCODED = /[^\t\n\r\x20-\x3c\x3e-\x7e]+|[ \t](?=[\r\n]|$)/g;

/** nodemailer's `encode`: each UTF-8 byte of what ENCODED matches as `=XX`, upper-case hex. */
export function encode(value: string): string {
  return value.replace(ENCODED, escapeRun);
}

const HEX = '0123456789ABCDEF';
const hex = (byte: number) => `=${HEX[byte >> 4]}${HEX[byte & 15]}`;

/** A run's UTF-8 bytes as escapes; a lone surrogate as U+FFFD, as Buffer.from writes it. */
function escapeRun(run: string): string {
  let out = '';
  for (let i = 0; i < run.length; i++) {
    let code = run.charCodeAt(i);
    if (code < 0x80) {
      out += hex(code);
    } else if (code < 0x800) {
      out += hex(0xc0 | (code >> 6)) + hex(0x80 | (code & 63));
    } else if (code < 0xd800 || code > 0xdfff) {
      out += hex(0xe0 | (code >> 12)) + hex(0x80 | ((code >> 6) & 63)) + hex(0x80 | (code & 63));
    } else {
      const low = code <= 0xdbff ? run.charCodeAt(i + 1) : NaN;
      if (low >= 0xdc00 && low <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        out += hex(0xf0 | (code >> 18)) + hex(0x80 | ((code >> 12) & 63)) + hex(0x80 | ((code >> 6) & 63)) + hex(0x80 | (code & 63));
        i++;
      } else {
        out += '=EF=BF=BD';
      }
    }
  }
  return out;
}

const isHex = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
/** What `.` in a regular expression does not match. */
const isLineTerminator = (c: number) => c === 10 || c === 13 || c === 0x2028 || c === 0x2029;
const isBreakable = (c: number) => c === 32 || c === 9 || c === 46 || c === 44 || c === 33 || c === 63; // space \t . , ! ?

/**
 * nodemailer's `wrap`, step by step, on indexes instead of substrings: each line ends after a
 * CRLF it holds, else after a line end in its last third, else after a space or punctuation in
 * its last third, else before an escape it would cut (or a UTF-8 sequence it would split), and
 * a line that does not end the text or a line gets a soft break (`=` CRLF).
 */
export function wrap(str: string, lineLength = 76): string {
  return str.length <= lineLength ? str : wrapLines(str, lineLength);
}

/** wrap without its shortcut for a text that fits one line: a longer text's last line goes through it all. */
function wrapLines(str: string, lineLength: number): string {
  const len = str.length;
  const margin = Math.floor(lineLength / 3);
  let result = '';
  let pos = 0;
  let crlf = -2; // the next CRLF at or after pos (-1: none), found again once passed
  while (pos < len) {
    let end = Math.min(pos + lineLength, len); // the line is str[pos, end)
    if (crlf !== -1 && crlf < pos) crlf = str.indexOf('\r\n', pos);
    if (crlf !== -1 && crlf + 2 <= end) {
      result += str.slice(pos, crlf + 2);
      pos = crlf + 2;
      continue;
    }
    if (str.charCodeAt(end - 1) === 10) {
      result += str.slice(pos, end);
      pos = end;
      continue;
    }
    const tail = Math.max(pos, end - margin);
    // A line end in the last third, with no other line terminator after it: up to it.
    let last = end - 1;
    while (last >= tail && !isLineTerminator(str.charCodeAt(last))) last--;
    if (last >= tail && str.charCodeAt(last) === 10) {
      result += str.slice(pos, last + 1);
      pos = last + 1;
      continue;
    }
    let space = -1;
    if (end - pos > lineLength - margin) {
      for (let i = end - 1; i >= tail; i--) {
        if (isBreakable(str.charCodeAt(i))) {
          space = i;
          break;
        }
      }
    }
    if (space !== -1) {
      end = space + 1;
    } else if (endsInEscape(str, pos, end)) {
      // An escape cut short goes to the next line whole.
      if (end - pos >= 2 && str.charCodeAt(end - 2) === 61 && isHex(str.charCodeAt(end - 1))) end -= 2;
      else if (str.charCodeAt(end - 1) === 61) end -= 1;
      // So does a UTF-8 sequence: its escapes back to its first byte (0xC0 or more).
      while (end - pos > 3 && end - pos < len - pos && !onlyEscapes(str, pos, end) && endsInEscape(str, pos, end, true)) {
        const code = parseInt(str.slice(end - 2, end), 16);
        if (code < 128) break;
        end -= 3;
        if (code >= 0xc0) break;
      }
    }
    if (end === pos) end = Math.min(pos + lineLength, len);
    if (end < len && str.charCodeAt(end - 1) !== 10) {
      if (end - pos === lineLength && endsInEscape(str, pos, end, true)) end -= 3;
      else if (end - pos === lineLength) end -= 1;
      result += `${str.slice(pos, end)}=\r\n`;
    } else {
      result += str.slice(pos, end);
    }
    pos = end;
  }
  return result;
}

/**
 * Whether str[pos, end) ends with `=` and up to two hex digits (`whole`: exactly two), i.e.
 * `/[=][\da-f]{0,2}$/i` or `/[=][\da-f]{2}$/i`.
 */
function endsInEscape(str: string, pos: number, end: number, whole = false): boolean {
  for (let n = whole ? 2 : 0; n <= 2; n++) {
    const at = end - 1 - n;
    if (at < pos || str.charCodeAt(at) !== 61) continue;
    let all = true;
    for (let i = at + 1; i < end; i++) if (!isHex(str.charCodeAt(i))) all = false;
    if (all) return true;
  }
  return false;
}

/** Whether str[pos, end) is one to four escapes and nothing else: `/^(?:=[\da-f]{2}){1,4}$/i`. */
function onlyEscapes(str: string, pos: number, end: number): boolean {
  const n = end - pos;
  if (n % 3 !== 0 || n < 3 || n > 12) return false;
  for (let i = pos; i < end; i += 3) {
    if (str.charCodeAt(i) !== 61 || !isHex(str.charCodeAt(i + 1)) || !isHex(str.charCodeAt(i + 2))) return false;
  }
  return true;
}
