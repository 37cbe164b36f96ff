/**
 * Provider credentials must never leave the gateway. Providers (and proxies in front of them)
 * echo the key they received in error text, so everything that comes from upstream and goes to
 * a client or a log passes through `scrub` first.
 */
import { REDACTED } from "../kit/platform.ts";

/** A credential's current token and the one before it. */
const MINTED_KEPT = 2;

/** JSON's two-character escapes, by the character they stand for. */
const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\\\"',
  "\\": "\\\\\\\\",
  "/": "\\\\/",
  "\b": "\\\\b",
  "\f": "\\\\f",
  "\n": "\\\\n",
  "\r": "\\\\r",
  "\t": "\\\\t",
};

/** `\uXXXX` for one UTF-16 unit, as a pattern taking its hex digits in either case. */
function unicodeEscape(unit: number): string {
  const hex = unit.toString(16).padStart(4, "0");
  return "\\\\u" + [...hex].map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d)).join("");
}

/**
 * A pattern matching every JSON spelling of `key`: each character as itself, as `\uXXXX` (hex
 * in either case) or as its short escape (`\/` for `/`), mixed freely. What a JSON parser, and
 * so a client, would decode into the key.
 */
function jsonSpellings(key: string): string {
  let out = "";
  for (let i = 0; i < key.length; i++) {
    const c = key[i];
    const alternatives = [
      c.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&"),
      unicodeEscape(key.charCodeAt(i)),
    ];
    if (SHORT_ESCAPES[c]) alternatives.push(SHORT_ESCAPES[c]);
    out += `(?:${alternatives.join("|")})`;
  }
  return out;
}

export class Secrets {
  /** The forms a key is echoed in as plain text, longest first (so a key's prefix never wins). */
  private forms: string[] = [];
  private keys: string[] = [];
  /** Every JSON spelling of every key (undefined: no keys). */
  private spellings?: RegExp;
  /** Whether some key holds a `/` (its `\/` spelling is then looked for too). */
  private slash = false;
  private longestForm = 0;
  /** Configured keys: kept for good. */
  private fixed = new Set<string>();
  /** Each credential's minted tokens, the last `MINTED_KEPT`. */
  private mintedSets: string[][] = [];

  constructor(keys: Iterable<string | undefined>) {
    this.add(keys);
  }

  /**
   * Adds keys; none is ever removed, so after a reload the keys that streams still open were
   * started with stay scrubbed too.
   */
  add(keys: Iterable<string | undefined>): void {
    for (const key of keys) {
      // A key this short would redact ordinary words; no real provider key is.
      if (key && key.length >= 8) this.fixed.add(key);
    }
    this.rebuild();
  }

  /**
   * A holder for the secrets one credential mints (its access tokens): each is scrubbed from when
   * it is registered, and once two newer ones are, it is dropped — the current token and the one
   * before it (still on calls in flight) stay scrubbed, and the set does not grow with every
   * refresh.
   */
  minted(): (token: string) => void {
    const held: string[] = [];
    this.mintedSets.push(held);
    return (token) => {
      if (token.length < 8 || held.includes(token)) return;
      held.push(token);
      if (held.length > MINTED_KEPT) held.shift();
      this.rebuild();
    };
  }

  private rebuild(): void {
    const all = new Set([...this.fixed, ...this.mintedSets.flat()]);
    const forms = new Set<string>();
    for (const key of all) {
      forms.add(key);
      forms.add(encodeURIComponent(key));
      forms.add(JSON.stringify(key).slice(1, -1));
    }
    this.forms = [...forms].sort((a, b) => b.length - a.length);
    this.keys = [...all].sort((a, b) => b.length - a.length);
    this.spellings = this.keys.length
      ? new RegExp(this.keys.map(jsonSpellings).join("|"), "g")
      : undefined;
    this.slash = this.keys.some((k) => k.includes("/"));
    // `\uXXXX` is the longest spelling of a character: six of them.
    this.longestForm = Math.max(this.forms[0]?.length ?? 0, 6 * (this.keys[0]?.length ?? 0));
  }

  static none = new Secrets([]);

  /** The longest text a key may be echoed as, so a scanner knows how much of a tail to hold. */
  get longest(): number {
    return this.longestForm;
  }

  scrub(text: string): string {
    for (const form of this.forms) {
      if (text.includes(form)) text = text.replaceAll(form, REDACTED);
    }
    return this.mayBeEscaped(text) ? text.replace(this.spellings!, REDACTED) : text;
  }

  /** Whether `text` holds any key (cheaper than scrubbing when it almost never does). */
  found(text: string): boolean {
    if (this.forms.some((form) => text.includes(form))) return true;
    if (!this.mayBeEscaped(text)) return false;
    this.spellings!.lastIndex = 0;
    return this.spellings!.test(text);
  }

  /**
   * Whether `text` could spell a key other than as one of the plain forms: every other JSON
   * spelling uses a `\u` escape, or `\/`.
   */
  private mayBeEscaped(text: string): boolean {
    return this.spellings !== undefined &&
      (text.includes("\\u") || (this.slash && text.includes("\\/")));
  }
}
