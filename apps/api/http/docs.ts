import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express, { type Router } from 'express';

/** swagger-ui-dist's files: the renderer is served from the package, so the page works offline. */
const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS = new Set(['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png', 'favicon-16x16.png']);

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>mailroom API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png" sizes="32x32">
</head>
<body>
  <noscript>This page renders <a href="/openapi.json">/openapi.json</a> with JavaScript.</noscript>
  <div id="docs"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;

// A script file rather than an inline one, so a Content-Security-Policy without 'unsafe-inline' allows it.
// validatorUrl null: the default badge would send the document to a third-party validator.
const INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#docs',
  deepLinking: true,
  validatorUrl: null,
});
`;

/** `GET /docs`: the API reference, rendered in the browser from `/openapi.json` by Swagger UI. */
export function docsRouter(): Router {
  const router = express.Router();
  router.get('/docs', (_req, res) => {
    res.type('html').send(PAGE);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('text/javascript').send(INIT);
  });
  router.get('/docs/assets/:file', (req, res, next) => {
    if (!ASSETS.has(req.params.file)) return next();
    res.sendFile(join(SWAGGER_UI, req.params.file), { maxAge: '1d' });
  });
  return router;
}
