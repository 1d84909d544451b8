// A page's heading: names the page in the tab title too, and takes the keyboard focus when the page
import type { ComponentChildren } from 'preact';
// opens, so a screen reader announces where a navigation led and Tab starts from the page's top.
import { useEffect, useRef } from 'preact/hooks';

export function PageHeading({ children, title }: { children: ComponentChildren; title: string }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · svc console`;
    ref.current?.focus();
  }, [title]);
  return (
    <h1 ref={ref} tabIndex={-1}>
      {children}
    </h1>
  );
}
