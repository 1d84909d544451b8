// How a record's value goes into a page, one rule for the server's first render (first-render.ts)
// and the browser's client (client/main.ts, which bundles this file): as text, and into `href` or
// `src` only as an http(s) URL. No DOM and no Node.js here: both sides import it.

type Value = string | number | boolean | null | undefined;

/** A value as text: nothing for none or false, ✓ for true. */
export function shown(v: Value): string {
  if (v === null || v === undefined || v === false) return '';
  return v === true ? '✓' : String(v);
}

/** A value as a link's address, resolved against the page, when its scheme is http or https. */
export function safeUrl(v: Value, base: string): string | undefined {
  if (typeof v !== 'string' || !v) return undefined;
  try {
    const u = new URL(v, base);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : undefined;
  } catch {
    return undefined;
  }
}
