/** Model-name globs (`*` matches any run of characters), as routes and prices write them. */
export function globToRegExp(glob: string): RegExp {
  const body = glob.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*");
  // `s`: a newline in a model name must not slip past a `*` into "no route".
  return new RegExp(`^${body}$`, "s");
}
