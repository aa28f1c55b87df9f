/**
 * The few browser globals the tests use inside page.evaluate callbacks. The project compiles
 * against lib ES2023 without lib.dom, so each test file declares these module-locally
 * (`declare const document: BrowserDocument`) instead of adding the DOM to the whole program.
 */
export interface BrowserElement {
  id: string;
  textContent: string | null;
  hidden: boolean;
  value: string;
  labels: { length: number } | null;
  dispatchEvent(event: Event): boolean;
}

export interface BrowserDocument {
  activeElement: BrowserElement | null;
  getElementById(id: string): BrowserElement | null;
  querySelectorAll(selector: string): Iterable<BrowserElement>;
}

export interface BrowserWindow {
  __pwned?: string;
}

export type GetComputedStyle = (element: unknown) => { outlineWidth: string };
export type RequestAnimationFrame = (callback: () => void) => number;
export interface NavigationTiming {
  domContentLoadedEventEnd: number;
  loadEventEnd: number;
}
export interface BrowserPerformance {
  now(): number;
  getEntriesByType(type: "navigation"): NavigationTiming[];
}
