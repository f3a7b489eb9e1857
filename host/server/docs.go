package server

import (
	"embed"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/api"
)

// apiDocs is the API reference page and Stoplight Elements' browser bundle,
// which make copies in from the npm package web/apidocs pins
// (web/fetch-npm-files.sh), so that /docs loads nothing from any
// other origin and works offline.
//
//go:embed apidocs
var apiDocs embed.FS

// docsAssets are the bundle's files and their media types.
var docsAssets = []struct{ name, mediaType string }{
	{"web-components.min.js", "text/javascript; charset=utf-8"},
	{"web-components.min.js.LICENSE.txt", "text/plain; charset=utf-8"},
	{"styles.min.css", "text/css; charset=utf-8"},
}

// docsPolicy allows the page its own scripts and styles only. Elements
// sets style attributes from script, hence 'unsafe-inline' for styles, and
// the page is sandboxed so it can reach nothing but this origin.
const docsPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; sandbox allow-same-origin allow-scripts"

func serveDocs(c *fiber.Ctx) error {
	b, err := apiDocs.ReadFile("apidocs/index.html")
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentSecurityPolicy, docsPolicy)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Send(b)
}

func serveDocsAsset(c *fiber.Ctx) error {
	for _, a := range docsAssets {
		if a.name != c.Params("asset") {
			continue
		}
		b, err := apiDocs.ReadFile("apidocs/" + a.name)
		if err != nil {
			// The binary was built without make, which copies the bundle in.
			return writeProblem(c, http.StatusNotFound, "the API reference's assets are not in this build; build it with make", nil)
		}
		c.Set(fiber.HeaderContentType, a.mediaType)
		c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
		return c.Send(b)
	}
	return writeProblem(c, http.StatusNotFound, "no such asset of the API reference", nil)
}

// documentDocsAssets declares the asset route.
func (s *Server) documentDocsAssets(limited func(map[string]*huma.Response) map[string]*huma.Response) {
	names := make([]any, 0, len(docsAssets))
	for _, a := range docsAssets {
		names = append(names, a.name)
	}
	s.API.OpenAPI().AddOperation(&huma.Operation{OperationID: "docs-asset", Method: http.MethodGet, Path: "/docs/{asset}", Tags: []string{"meta"},
		Security: []map[string][]string{}, Summary: "A script, style sheet or licence of the API reference",
		Parameters: []*huma.Param{{Name: "asset", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeString, Enum: names}}},
		Responses: limited(map[string]*huma.Response{
			"200": {Description: "OK", Content: map[string]*huma.MediaType{
				"text/javascript": {Schema: &huma.Schema{Type: huma.TypeString}},
				"text/css":        {Schema: &huma.Schema{Type: huma.TypeString}},
				"text/plain":      {Schema: &huma.Schema{Type: huma.TypeString}},
			}},
			"404": {Description: "No such asset", Content: map[string]*huma.MediaType{api.MimeProblem: {Schema: api.ProblemSchema(s.API)}}},
		})})
}
