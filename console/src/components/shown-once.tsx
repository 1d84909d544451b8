// A secret the API shows once (a new token, a webhook's signing secret): in a notice at the page's
// top with the focus on it, selected for copying, a copy button, and "I have copied it" to close it.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export function ShownOnce(p: {
  /** The notice's id; its heading is `<id>-heading`, the field `fieldId`. */
  id: string;
  fieldId: string;
  heading: ComponentChildren;
  /** What the warning says after "Copy it now". */
  warning: ComponentChildren;
  /** The field's label, and the word for the value in the copy button and messages ("token"). */
  label: string;
  what: string;
  value: string;
  rows: number;
  onDone: () => void;
}) {
  const [copied, setCopied] = useState<string | undefined>(undefined);
  // The form is at the page's foot and this notice at its top: the focus (and the view) come here,
  // onto the value itself, selected for copying.
  const field = useRef<HTMLTextAreaElement>(null);
  useEffect(() => field.current?.focus(), []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(p.value);
      setCopied('Copied to the clipboard.');
    } catch {
      // No clipboard permission (an http origin other than localhost): the text is selectable.
      setCopied(`The browser refused the clipboard: select the ${p.what} and copy it.`);
    }
  };
  return (
    <div class="notice" id={p.id} role="region" aria-labelledby={`${p.id}-heading`}>
      <h2 id={`${p.id}-heading`}>{p.heading}</h2>
      <p class="warn-text">{p.warning}</p>
      <label for={p.fieldId}>{p.label}</label>
      <textarea ref={field} id={p.fieldId} class="token" readOnly rows={p.rows} value={p.value} onFocus={(e) => e.currentTarget.select()} />
      <p>
        <button type="button" onClick={() => void copy()}>
          Copy the {p.what}
        </button>{' '}
        <button type="button" class="secondary" onClick={p.onDone}>
          I have copied it
        </button>
      </p>
      <p role="status">{copied}</p>
    </div>
  );
}
