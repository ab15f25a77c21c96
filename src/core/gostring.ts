/** Go string literals, as the SQL lexer and the Go template engine read them. */

function isHex(c: string): boolean {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/**
 * Go's `strconv.Unquote` of the content of a double-quoted literal (quotes removed); null when Go rejects it. SQL
 * strings and Go template strings and character constants are unquoted by it.
 */
export function unquoteGo(body: string): string | null {
  let out = '';
  let i = 0;
  while (i < body.length) {
    const c = body[i];
    if (c !== '\\') {
      let end = i;
      for (; end < body.length && body[end] !== '\\'; end++) {
        if (body[end] === '\n' || body[end] === '"') return null;
      }
      out += body.slice(i, end);
      i = end;
      continue;
    }
    const e = body[i + 1] ?? '';
    i += 2;
    switch (e) {
      case 'a':
        out += '\x07';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case '\\':
        out += '\\';
        break;
      case '"':
        out += '"';
        break;
      case 'x':
      case 'u':
      case 'U': {
        const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
        const hex = body.slice(i, i + n);
        if (hex.length !== n || ![...hex].every(isHex)) return null;
        const cp = parseInt(hex, 16);
        if (e !== 'x' && (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))) return null;
        out += String.fromCodePoint(cp);
        i += n;
        break;
      }
      default: {
        const oct = body.slice(i - 1, i + 2);
        if (oct.length !== 3 || ![...oct].every((d) => d >= '0' && d <= '7')) return null;
        const v = parseInt(oct, 8);
        if (v > 255) return null;
        out += String.fromCharCode(v);
        i += 2;
      }
    }
  }
  return out;
}
