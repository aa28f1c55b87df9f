/**
 * JSON from strangers (sidecars, manifests, config files). JSON.parse accepts things that break
 * later code: duplicate keys (last one silently wins), nesting thousands deep (recursive walkers and
 * JSON.stringify overflow the stack), `__proto__`/`constructor`/`prototype` keys, and lone
 * surrogates from invalid UTF-8. This parser refuses them before JSON.parse sees the text.
 */
export interface UntrustedJsonLimits {
  maxBytes: number;
  maxDepth: number;
}

export const DEFAULT_JSON_LIMITS: UntrustedJsonLimits = { maxBytes: 1024 * 1024, maxDepth: 32 };

export type UntrustedJsonResult = { ok: true; value: unknown } | { ok: false; message: string };

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);
const utf8 = new TextDecoder("utf-8", { fatal: true });

export function parseUntrustedJson(
  input: Uint8Array | string,
  limits: UntrustedJsonLimits = DEFAULT_JSON_LIMITS,
): UntrustedJsonResult {
  let text: string;
  if (typeof input === "string") {
    text = input;
  } else {
    if (input.length > limits.maxBytes)
      return { ok: false, message: `${input.length} bytes; the limit is ${limits.maxBytes}` };
    try {
      text = utf8.decode(input);
    } catch {
      return { ok: false, message: "not valid UTF-8" };
    }
  }
  if (text.length > limits.maxBytes) return { ok: false, message: `larger than ${limits.maxBytes} bytes` };
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  // Objects carry their key set, arrays null; `expectKey` is true where the next string is a key.
  const stack: Array<Set<string> | null> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top && expectKey) {
        let key: string;
        try {
          key = JSON.parse(text.slice(i, j + 1)) as string;
        } catch {
          return { ok: false, message: `invalid string at offset ${i}` };
        }
        if (top.has(key)) return { ok: false, message: `duplicate key ${JSON.stringify(key)}` };
        if (FORBIDDEN_KEYS.has(key)) return { ok: false, message: `forbidden key ${JSON.stringify(key)}` };
        top.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === 0x7b || c === 0x5b) {
      stack.push(c === 0x7b ? new Set() : null);
      if (stack.length > limits.maxDepth)
        return { ok: false, message: `nested deeper than ${limits.maxDepth} levels` };
      expectKey = c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
      expectKey = false;
    } else if (c === 0x2c) {
      expectKey = stack[stack.length - 1] instanceof Set;
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
  // Depth is bounded above, so this walk cannot overflow the stack.
  if (hasLoneSurrogate(value))
    return { ok: false, message: "contains a lone UTF-16 surrogate (invalid Unicode)" };
  return { ok: true, value };
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === "string") return LONE_SURROGATE.test(value);
  if (Array.isArray(value)) return value.some(hasLoneSurrogate);
  if (value && typeof value === "object") {
    return Object.entries(value).some(([k, v]) => LONE_SURROGATE.test(k) || hasLoneSurrogate(v));
  }
  return false;
}
