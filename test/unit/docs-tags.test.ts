/**
 * Rule tags resolve: every rule tag (J7, P6, X8, D1–D5, ...) that a comment,
 * a string (test names included) or a README cites is defined in
 * docs/semantics.md, and nothing points at a document the repository does
 * not have. Also: the README's error table and docs/errors.md name exactly
 * the codes `LaterErrorCode` ships (`packages/runtime/src/later-error.ts`).
 *
 * What counts as a tag citation (so that SVG paths, hex colours or an `M1` in
 * unrelated text are not taken for one): a tag at the start of a comment or
 * string followed by `:`, `/`, `)` or a word ("J9: ...", "D1 overview",
 * "J1/J2"); a tag inside parentheses at their start or after `,` `;` `/` or
 * "and" ("(J14)", "(as servers, P5)"); a tag after "rule(s)" or
 * "semantics.md"; a tag in a table cell ("| D4 |"); and tag lists and ranges
 * ("D1–D3", "J3/J7", "L4, L5"). In code files only comments and string
 * literals are read.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SELF = relative(ROOT, fileURLToPath(import.meta.url));

/** The groups docs/semantics.md must define, with their last number. */
const GROUPS: Record<string, number> = { J: 14, P: 8, R: 3, L: 8, X: 13, D: 7, M: 3 };

const T = String.raw`[JPRLXDM]\d{1,2}`;
const TAG = new RegExp(String.raw`\b(${T})\b`, "g");
/** Separators inside a tag list: "D1–D3", "J3/J7", "L4, L5", "D1 and D5". */
const SEP = String.raw`\s*(?:[–-]|/|,|;|\band\b|\bor\b)\s*`;
const CONTEXTS: RegExp[] = [
  // At the start of a comment or string: "J9: ...", "D1 overview: ...", "J1/J2: ...", "D2 `GET ...`".
  new RegExp(String.raw`^\s*(${T}(?:${SEP}${T})*)(?=\s*[:/)]|\s+[a-z\`{'"(])`, "g"),
  // Inside parentheses, first or after a separator: "(J14)", "(as servers, P5)", "(D2's ...)".
  new RegExp(String.raw`(?:\(|${SEP})\s*(${T}(?:${SEP}${T})*)\b`, "g"),
  // After "rule", "rules" or "semantics.md".
  new RegExp(String.raw`(?:\brules?|semantics\.md)\s+(${T}(?:${SEP}${T})*)\b`, "g"),
  // A table cell: "| D4 |", "| D1 {@link Overview} |".
  new RegExp(String.raw`\|\s*(${T}(?:${SEP}${T})*)\b`, "g"),
  // A list or range of two tags or more anywhere: "D1–D3 and D5".
  new RegExp(String.raw`\b(${T}(?:${SEP}${T})+)\b`, "g"),
];

/** Mentions of a document that lives outside the repository (imports of `backend/shared/*.js` modules are code, not such a mention). */
const OUTSIDE = [/DESIGN\.md/, /\.\.\/shared\b(?!\/[\w-]+\.js\b)/, /\/work\/shared/, /\bDESIGN\s+(?:§|[JPRLXDM]\d)/, /\bdesign doc\b/i];

const CODE = /\.(?:[cm]?[jt]sx?)$/;
const TEXT = /\.(?:[cm]?[jt]sx?|md|css|html)$/;
const SKIP_DIRS = new Set(["node_modules", "dist", ".git", ".tmp"]);
/** Written by the build, not committed. */
const SKIP_FILES = new Set(["packages/runtime/src/dashboard/page-assets.ts"]);

function walk(dir: string, out: string[]): void {
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) walk(path, out);
    } else if (TEXT.test(entry.name) && !SKIP_FILES.has(path) && path !== SELF) out.push(path);
  }
}

/** Every file scanned: the packages, tests, examples and benchmarks, the READMEs and docs/. */
function scannedFiles(): string[] {
  const files: string[] = ["README.md"];
  for (const dir of ["packages", "test", "examples", "bench", "docs"]) walk(dir, files);
  return files.filter((f) => statSync(join(ROOT, f)).isFile());
}

const STRING = /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g;

/**
 * The parts of a line of code that are prose: the whole line when it is a
 * comment line, else its trailing `//` comment and its string literals.
 * Line by line, so a string or comment spanning lines is read per line.
 */
function prose(line: string): string[] {
  const trimmed = line.trimStart();
  if (trimmed.startsWith("//") || trimmed.startsWith("*") || trimmed.startsWith("/*")) return [trimmed.replace(/^(?:\/\/+|\/\*+|\*+)\s?/, "")];
  const parts: string[] = [];
  for (const m of line.matchAll(STRING)) parts.push(m[0].slice(1, -1));
  const comment = line.replace(STRING, '""').indexOf("//");
  if (comment >= 0) parts.push(line.replace(STRING, '""').slice(comment + 2));
  return parts;
}

/** The tags cited in `text`, by the contexts above. */
function citedTags(line: string): Set<string> {
  const found = new Set<string>();
  // A tag in a code span ("`J7`") reads as the tag.
  const text = line.replace(new RegExp(String.raw`\`(${T})\``, "g"), "$1");
  for (const context of CONTEXTS) {
    for (const m of text.matchAll(context)) for (const t of m[1]!.matchAll(TAG)) found.add(t[1]!);
  }
  return found;
}

/** Tags docs/semantics.md defines: a heading ("### J7 Leases") or a bold tag ("- **J7** ..."). */
function definedTags(): Set<string> {
  const text = readFileSync(join(ROOT, "docs/semantics.md"), "utf8");
  const defined = new Set<string>();
  for (const m of text.matchAll(new RegExp(String.raw`^#{2,4}\s+(${T})\b|\*\*(${T})\*\*`, "gm"))) defined.add((m[1] ?? m[2])!);
  return defined;
}

/** The codes of `LaterErrorCode`. */
function shippedCodes(): Set<string> {
  const source = readFileSync(join(ROOT, "packages/runtime/src/later-error.ts"), "utf8");
  const union = /export type LaterErrorCode =([^;]*);/.exec(source);
  if (!union) throw new Error("later-error.ts: no LaterErrorCode union");
  return new Set([...union[1]!.matchAll(/"([A-Z_]+)"/g)].map((m) => m[1]!));
}

/** The first-column codes of the Markdown table under `heading` in `file`. */
function tableCodes(file: string, heading: RegExp): string[] {
  const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
  const codes: string[] = [];
  let inSection = false;
  for (const line of lines) {
    if (/^#{1,6}\s/.test(line)) inSection = heading.test(line);
    else if (inSection) {
      const m = /^\|\s*`([A-Z_]+)`\s*\|/.exec(line);
      if (m) codes.push(m[1]!);
    }
  }
  return codes;
}

describe("rule tags and documentation links", () => {
  const files = scannedFiles();

  it("docs/semantics.md defines every tag of every group", () => {
    const defined = definedTags();
    const missing = Object.entries(GROUPS).flatMap(([group, last]) =>
      Array.from({ length: last }, (_, i) => `${group}${i + 1}`).filter((tag) => !defined.has(tag)),
    );
    expect(missing).toEqual([]);
  });

  it("every tag cited in code, tests, examples and READMEs is defined in docs/semantics.md", () => {
    const defined = definedTags();
    const undefinedTags: string[] = [];
    let cited = 0;
    for (const file of files) {
      if (file === "docs/semantics.md") continue;
      const code = CODE.test(file);
      readFileSync(join(ROOT, file), "utf8")
        .split("\n")
        .forEach((line, i) => {
          for (const text of code ? prose(line) : [line]) {
            for (const tag of citedTags(text)) {
              cited++;
              if (!defined.has(tag)) undefinedTags.push(`${file}:${i + 1}: ${tag} is not defined in docs/semantics.md`);
            }
          }
        });
    }
    expect(undefinedTags).toEqual([]);
    // The scan finds the citations the tree has (a broken pattern would find none and pass).
    expect(cited).toBeGreaterThan(150);
  });

  it("nothing cites a document outside the repository", () => {
    const found: string[] = [];
    for (const file of files) {
      readFileSync(join(ROOT, file), "utf8")
        .split("\n")
        .forEach((line, i) => {
          for (const pattern of OUTSIDE) if (pattern.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });

  it("the README's error table and docs/errors.md name exactly the codes LaterErrorCode ships", () => {
    const shipped = [...shippedCodes()].sort();
    const readme = tableCodes("README.md", /^###\s+Errors\b/);
    const docs = tableCodes("docs/errors.md", /^###\s/);
    expect(readme.filter((code) => !shipped.includes(code))).toEqual([]);
    expect([...new Set(readme)].sort()).toEqual(shipped);
    expect([...new Set(docs)].sort()).toEqual(shipped);
  });
});
