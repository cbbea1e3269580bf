/**
 * M6: the plain YAML most manifests are written in, read without the `yaml` package.
 *
 * A cold process spends most of a mount in the `yaml` package (its lexer, parser and composer, with
 * every node's position kept for M4's messages) — 2 ms a manifest before the JIT warms up. This
 * reader knows only a small subset: block mappings with plain keys, block sequences of scalars,
 * one-line flow sequences of scalars, plain and one-line quoted scalars, `|`/`>` block scalars
 * (clip or strip, one indentation, no blank lines inside), and comments. For anything else — and
 * for every doubt — it returns undefined, and the caller uses the full parser. What it does return
 * is exactly what `yaml` (YAML 1.2, core schema) makes of the same text; test/manifest/plain.test.ts
 * compares the two on generated and mutated manifests.
 *
 * It never reports a mistake itself: a manifest with any error, even one this reader could see, is
 * read again by the full parser, which says where.
 */

/** Characters outside printable ASCII, newline and the plain BMP: control characters, tabs, CR, surrogates, U+2028/9, BOM. */
const UNUSUAL = /[^\n\x20-\x7e\u00a0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]/;
/** Keys read as strings whatever the schema: a letter or _, then letters, digits and _. */
const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Plain scalars the core schema reads as something other than a string (or the key as something other than itself). */
const KEYWORD = /^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE)$/;
/** What the core schema reads as a number (yaml's int, float, exponent, octal, hex, inf and nan tags together). */
const NUMERIC =
  /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|0o[0-7]+|0x[0-9a-fA-F]+)$/;
/** YAML's white space is the space (tabs never get here): String#trim would also take U+00A0 and its kin. */
const trim = (s: string): string => {
  // A loop, not / +$/: that regex is quadratic on a long run of spaces followed by something else.
  let a = 0;
  let b = s.length;
  while (a < b && s.charCodeAt(a) === 32) a++;
  while (b > a && s.charCodeAt(b - 1) === 32) b--;
  return s.slice(a, b);
};
/** First characters that make a YAML scalar something other than a plain one ("-x" is plain: a dash and a space is an entry). */
const INDICATOR = /^(?:[?:,[\]{}#&*!|>'"%@`]|-(?:$| |-))/;

class NotPlain extends Error {}
const notPlain = (): never => {
  throw new NotPlain();
};

interface Line {
  indent: number;
  /** The text after the indentation. */
  text: string;
}

/** The value of a one-line scalar (`s` trimmed, no comment), or NotPlain. */
function scalar(s: string, inFlow: boolean): unknown {
  if (s === '') return notPlain(); // an empty value: null, but rare enough to leave to the full parser
  if (s[0] === "'") {
    const end = s.lastIndexOf("'");
    if (end === 0 || end !== s.length - 1) return notPlain();
    const body = s.slice(1, -1);
    // '' is a quote; a lone ' inside would have ended the scalar.
    if (/'(?!')/.test(body.replace(/''/g, ''))) return notPlain();
    return body.replace(/''/g, "'");
  }
  if (s[0] === '"') {
    if (s.length < 2 || s[s.length - 1] !== '"') return notPlain();
    const body = s.slice(1, -1);
    if (/["\\]/.test(body)) return notPlain(); // escapes: the full parser
    return body;
  }
  if (INDICATOR.test(s) || s.includes(': ') || s.endsWith(':') || s.includes(' #')) return notPlain();
  if (inFlow && /[,[\]{}#]/.test(s)) return notPlain();
  if (KEYWORD.test(s)) {
    if (s === '~' || s[0] === 'n' || s[0] === 'N') return null;
    return s[0] === 't' || s[0] === 'T';
  }
  if (NUMERIC.test(s)) return notPlain(); // a number: rare in a manifest, and a zod error anyway
  return s;
}

/** Strips a trailing ` # comment` from a value that is not a block scalar; quoted values keep their `#`s. */
function withoutComment(s: string): string {
  if (s[0] === "'" || s[0] === '"') {
    const q = s[0];
    let i = 1;
    for (; i < s.length; i++) {
      if (s[i] === q) {
        if (q === "'" && s[i + 1] === "'") i++;
        else break;
      }
    }
    const rest = s.slice(i + 1);
    if (trim(rest) === '') return s.slice(0, i + 1);
    if (/^ +#/.test(rest)) return s.slice(0, i + 1);
    return notPlain();
  }
  const at = s.indexOf(' #');
  return trim(at >= 0 ? s.slice(0, at) : s);
}

/**
 * Reads `text` as plain YAML; undefined when it is not in the subset (the caller then uses the full
 * parser). The root must be a mapping.
 */
export function parsePlainYaml(text: string): Record<string, unknown> | undefined {
  if (UNUSUAL.test(text)) return undefined;
  const raw = text.split('\n');
  const lines: (Line | undefined)[] = raw.map((l) => {
    const text = l.replace(/^ +/, '');
    return { indent: l.length - text.length, text };
  });
  try {
    const r = new Reader(raw, lines);
    const first = r.nextContent();
    if (first === undefined || lines[first]?.indent !== 0) return undefined;
    const root = r.mapping(0);
    if (r.nextContent() !== undefined) return undefined;
    return root;
  } catch {
    // NotPlain, or anything unforeseen (a stack too deep for a hostile nesting): the full parser decides.
    return undefined;
  }
}

class Reader {
  private at = 0;
  constructor(
    private readonly raw: string[],
    private readonly lines: (Line | undefined)[],
  ) {}

  /** The index of the next line with content (not blank, not a comment), or undefined at the end. */
  nextContent(): number | undefined {
    while (this.at < this.lines.length) {
      const l = this.lines[this.at] as Line;
      if (l.text === '' || l.text[0] === '#') {
        this.at++;
        continue;
      }
      if (l.indent === 0 && /^(?:---|\.\.\.)(?: |$)/.test(l.text)) notPlain(); // document markers
      return this.at;
    }
    return undefined;
  }

  /** A block mapping whose keys sit at `indent`. */
  mapping(indent: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (;;) {
      const i = this.nextContent();
      if (i === undefined) return out;
      const l = this.lines[i] as Line;
      if (l.indent < indent) return out;
      if (l.indent > indent) notPlain();
      const colon = l.text.indexOf(':');
      if (colon <= 0) notPlain();
      const key = l.text.slice(0, colon);
      if (!KEY.test(key) || KEYWORD.test(key) || key === '__proto__' || Object.hasOwn(out, key)) notPlain();
      const after = l.text.slice(colon + 1);
      if (after !== '' && after[0] !== ' ') notPlain(); // "a:b" is one plain scalar, not a pair
      this.at = i + 1;
      const trimmed = trim(after);
      // "key: # note": a comment, the value on the next lines.
      const value = trimmed[0] === '#' ? '' : withoutComment(trimmed);
      out[key] = value === '' ? this.nested(indent) : this.inline(value, indent);
    }
  }

  /** What follows `key:` on the next lines: a mapping or a sequence, more indented. */
  private nested(indent: number): unknown {
    const i = this.nextContent();
    const l = i === undefined ? undefined : (this.lines[i] as Line);
    if (!l || l.indent <= indent) return notPlain(); // null, or a sequence at the key's own indentation
    if (l.text === '-' || l.text.startsWith('- ')) return this.sequence(l.indent);
    return this.mapping(l.indent);
  }

  /** A block sequence of scalars whose dashes sit at `indent`. */
  private sequence(indent: number): unknown[] {
    const out: unknown[] = [];
    for (;;) {
      const i = this.nextContent();
      if (i === undefined) return out;
      const l = this.lines[i] as Line;
      if (l.indent < indent) return out;
      if (l.indent > indent || !l.text.startsWith('- ')) notPlain();
      this.at = i + 1;
      const item = withoutComment(trim(l.text.slice(2)));
      if (item.includes(': ') || item.endsWith(':')) notPlain(); // a mapping inside the sequence
      out.push(scalar(item, false));
      this.continuation(indent);
    }
  }

  /** A value on the key's own line. */
  private inline(value: string, indent: number): unknown {
    if (value[0] === '|' || value[0] === '>') return this.block(value, indent);
    let out: unknown;
    if (value[0] === '[') {
      if (value[value.length - 1] !== ']') notPlain();
      const body = trim(value.slice(1, -1));
      out = body === '' ? [] : body.split(',').map((s) => scalar(trim(s), true));
    } else out = scalar(value, false);
    this.continuation(indent);
    return out;
  }

  /** A scalar ends on its line: a more-indented line after it would continue it (or be an error). */
  private continuation(indent: number): void {
    const i = this.nextContent();
    if (i !== undefined && (this.lines[i] as Line).indent > indent) notPlain();
  }

  /** `|`, `|-`, `>` or `>-` and the lines under it, all at one indentation, none blank. */
  private block(header: string, indent: number): string {
    if (!/^[|>]-?$/.test(header)) notPlain();
    const body: string[] = [];
    let blockIndent = -1;
    while (this.at < this.lines.length) {
      const l = this.lines[this.at] as Line;
      const raw = this.raw[this.at];
      if (l.text === '') {
        // A blank line inside the scalar, or after it: only trailing ones are plain.
        this.at++;
        const next = this.nextNonBlank();
        if (next === undefined || (this.lines[next] as Line).indent <= indent) break;
        notPlain();
      }
      if (l.indent <= indent) break;
      if (blockIndent < 0) blockIndent = l.indent;
      if (l.indent !== blockIndent || raw.endsWith(' ')) notPlain();
      body.push(l.text);
      this.at++;
    }
    if (body.length === 0) notPlain();
    const joined = body.join(header[0] === '>' ? ' ' : '\n');
    return header.endsWith('-') ? joined : `${joined}\n`;
  }

  private nextNonBlank(): number | undefined {
    for (let i = this.at; i < this.lines.length; i++) if ((this.lines[i] as Line).text !== '') return i;
    return undefined;
  }
}
