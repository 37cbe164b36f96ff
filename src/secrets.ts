/**
 * Provider credentials must never leave the gateway. Providers (and proxies in front of them)
 * echo the key they received in error text, so everything that comes from upstream and goes to
 * a client or a log passes through `scrub` first.
 */

const REDACTED = "[redacted]";

export class Secrets {
  /** Every form a key may be echoed in, longest first (so a key's prefix never wins). */
  private forms: string[] = [];

  constructor(keys: Iterable<string | undefined>) {
    this.add(keys);
  }

  /**
   * Adds keys; none is ever removed, so after a reload the keys that streams still open were
   * started with stay scrubbed too.
   */
  add(keys: Iterable<string | undefined>): void {
    const forms = new Set(this.forms);
    for (const key of keys) {
      // A key this short would redact ordinary words; no real provider key is.
      if (!key || key.length < 8) continue;
      forms.add(key);
      forms.add(encodeURIComponent(key));
      forms.add(JSON.stringify(key).slice(1, -1));
    }
    this.forms = [...forms].sort((a, b) => b.length - a.length);
  }

  static none = new Secrets([]);

  /** The longest form, so a stream scanner knows how much of a chunk's tail to hold. */
  get longest(): number {
    return this.forms[0]?.length ?? 0;
  }

  scrub(text: string): string {
    for (const form of this.forms) {
      if (text.includes(form)) text = text.replaceAll(form, REDACTED);
    }
    return text;
  }

  /** Whether `text` holds any key (cheaper than scrubbing when it almost never does). */
  found(text: string): boolean {
    return this.forms.some((form) => text.includes(form));
  }
}
