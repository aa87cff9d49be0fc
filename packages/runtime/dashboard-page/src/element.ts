/**
 * Builds the page's DOM. Text goes in only through `textContent` and
 * attribute values only through `setAttribute`, never through `innerHTML`
 * or an HTML string, so whatever a handler or a payload wrote (an error
 * message, a job type, a topic name) is shown as text by construction. No
 * `style` attribute is ever set (the page's Content-Security-Policy has no
 * `'unsafe-inline'`): looks come from classes in app.css.
 */

/** A child: a node, text (added as a text node), or nothing (skipped). */
export type Child = Node | string | number | null | undefined | false;

/** What {@link h} sets on an element. */
export interface ElementProps {
  className?: string;
  /** Tooltip. */
  title?: string;
  href?: string;
  /** Other attributes (`type`, `value`, `name`, `aria-*`, `data-*`, ...), set with `setAttribute`. */
  attrs?: Record<string, string | number | boolean | undefined>;
  onClick?: (event: MouseEvent) => void;
}

/** An HTML element with its props and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: ElementProps | null = null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props) applyProps(el, props);
  append(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** An SVG element; `attrs` are its geometry and class. */
export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  append(el, children);
  return el;
}

function applyProps(el: HTMLElement, props: ElementProps): void {
  if (props.className) el.className = props.className;
  if (props.title !== undefined) el.title = props.title;
  if (props.href !== undefined) el.setAttribute("href", props.href);
  for (const [name, value] of Object.entries(props.attrs ?? {})) {
    if (value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? "" : String(value));
  }
  if (props.onClick) el.addEventListener("click", props.onClick);
}

function append(el: Element, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "number" ? String(child) : child);
  }
}
