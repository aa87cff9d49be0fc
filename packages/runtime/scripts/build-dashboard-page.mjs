// Builds the dashboard page into src/dashboard/page-assets.ts (run by `pnpm build` before tsc):
// dashboard-page/src/main.ts bundled and minified by esbuild into one script, app.css
// minified, index.html as is; each a string of the generated module, which the dashboard
// serves from memory (nothing fetched at run time, no file read at run time).
//
// The page is type-checked by `tsc -p dashboard-page/tsconfig.json` (DOM types stay out of
// the runtime's own tsconfig); esbuild only strips types and bundles.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build, transform } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const page = join(root, "dashboard-page");
const out = join(root, "src", "dashboard", "page-assets.ts");

const script = await build({
  entryPoints: [join(page, "src", "main.ts")],
  bundle: true,
  minify: true,
  format: "iife",
  target: ["chrome109", "firefox115", "safari16"],
  legalComments: "none",
  write: false,
  logLevel: "warning",
});
const css = await transform(readFileSync(join(page, "app.css"), "utf8"), { loader: "css", minify: true, legalComments: "none" });
const assets = {
  "index.html": { contentType: "text/html; charset=utf-8", body: readFileSync(join(page, "index.html"), "utf8") },
  "app.js": { contentType: "text/javascript; charset=utf-8", body: script.outputFiles[0].text },
  "app.css": { contentType: "text/css; charset=utf-8", body: css.code },
};

const gzipped = Object.values(assets).reduce((sum, a) => sum + gzipSync(a.body, { level: 9 }).length, 0);
const lines = [
  "// DO NOT EDIT: written by scripts/build-dashboard-page.mjs from dashboard-page/ (run by `pnpm build`).",
  "/**",
  " * The dashboard page's files (D6), served by the dashboard at `GET {basePath}` (index.html)",
  ` * and \`GET {basePath}assets/<name>\`: ${gzipped} bytes gzipped in all.`,
  " */",
  "export const dashboardAssets: Readonly<Record<string, { contentType: string; body: string }>> = {",
  ...Object.entries(assets).map(
    ([name, a]) => `  ${JSON.stringify(name)}: { contentType: ${JSON.stringify(a.contentType)}, body: ${JSON.stringify(a.body)} },`,
  ),
  "};",
  "",
];
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, lines.join("\n"));
console.log(
  `dashboard page: ${Object.entries(assets)
    .map(([n, a]) => `${n} ${a.body.length} B`)
    .join(", ")}; ${gzipped} B gzipped`,
);
