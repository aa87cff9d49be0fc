/**
 * The dashboard page's files, served at `{basePath}` (index.html) and
 * `{basePath}assets/<name>`. A placeholder until the page is built: the
 * page build replaces this module with the bundled files (same export).
 */
export const dashboardAssets: Readonly<Record<string, { contentType: string; body: string }>> = {
  "index.html": {
    contentType: "text/html; charset=utf-8",
    body: `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>later dashboard</title><link rel="stylesheet" href="assets/app.css"></head>
<body><h1>later dashboard</h1><p>The dashboard page is not built in this release; its JSON API is at <a href="api/overview">api/overview</a>.</p></body>
</html>
`,
  },
  "app.css": { contentType: "text/css; charset=utf-8", body: "body { font-family: sans-serif; margin: 2rem; }\n" },
  "app.js": { contentType: "text/javascript; charset=utf-8", body: "// The dashboard page is not built in this release.\n" },
};
