// Package ui is Steward's web UI as the host serves it: server-rendered
// HTML from html/template, embedded in the binary and parsed once at
// start-up, with htmx loading the plugins' fragments into the pages.
//
// What lives here:
//
//   - templates/: the base layout (skip link, header with the tenant
//     picker and user menu, navigation, footer), the slot a page loads a
//     fragment into, and the dashboard, login, error and design-system
//     pages;
//   - static/: the design system's one style sheet (app.css), the small
//     first-party script (app.js) and, under static/vendor, htmx, which
//     make copies in from the npm package web/htmx pins;
//   - Assets, which serves those files under content-hashed names,
//     immutable and precompressed, as a plain net/http handler;
//   - UI, which renders the pages from typed data the host fills in.
//
// Plugins render their fragments with sdk/ui, whose components use this
// package's CSS classes; the design-system page shows each of them in each
// state. Nothing here imports the host: the host mounts Assets at
// StaticPrefix, calls UI's methods from its handlers and sets sessions,
// CSRF tokens and redirects itself.
//
// Every page is served under ContentSecurityPolicy: no inline script or
// style attribute is rendered anywhere, and dynamic sizes in charts are
// SVG attributes.
package ui
