// Changing a page by its parser's source offsets: every byte not named by an edit stays as written
// (the runtime's annotation of bindings, ingress-auth's first render of a page's reads).

/** Replaces src[at, end) (nothing for an insert: end = at) with text. */
export interface Edit {
  at: number;
  end: number;
  text: string;
}

export const insertAt = (at: number, text: string): Edit => ({ at, end: at, text });

/**
 * The source with the edits made, in offset order (inserts at one offset in the order given). An
 * edit that starts inside a range another edit replaces is dropped: the outer one's text stands.
 */
export function splice(src: string, edits: readonly Edit[]): string {
  const ordered = edits.map((e, i) => [e, i] as const).sort(([a, i], [b, j]) => a.at - b.at || i - j);
  let out = '';
  let last = 0;
  for (const [e] of ordered) {
    if (e.at < last) continue;
    out += src.slice(last, e.at) + e.text;
    last = e.end;
  }
  return out + src.slice(last);
}

/** Text for an element's contents: never markup. */
export function escapeText(s: string): string {
  return s.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));
}

/** A double-quoted attribute's value: never ends the attribute. */
export function escapeAttribute(s: string): string {
  return s.replace(/[&"<>]/g, (c) => (c === '&' ? '&amp;' : c === '"' ? '&quot;' : c === '<' ? '&lt;' : '&gt;'));
}
