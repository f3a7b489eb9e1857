package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Every response the suite receives is checked against the OpenAPI document
// the same host serves, so the document cannot drift from the server
// unnoticed. kin-openapi's openapi3filter validates OpenAPI 3.1 (JSON Schema
// 2020-12) documents, which huma emits.

func init() {
	// Content types the host answers that openapi3filter has no decoder
	// for by default.
	for _, text := range []string{"text/html", "text/css", "text/javascript", "image/svg+xml"} {
		openapi3filter.RegisterBodyDecoder(text, openapi3filter.PlainBodyDecoder)
	}
	openapi3filter.RegisterBodyDecoder("application/openapi+json", openapi3filter.JSONBodyDecoder)
}

// documents holds each host's document, fetched at its first request.
var documents sync.Map // *host → *servedDocument

type servedDocument struct {
	once   sync.Once
	router routers.Router
	err    error
}

func (h *host) document() (routers.Router, error) {
	v, _ := documents.LoadOrStore(h, &servedDocument{})
	d := v.(*servedDocument)
	d.once.Do(func() {
		resp, err := h.client.Get(h.url + "/openapi.json")
		if err != nil {
			d.err = err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			d.err = err
			return
		}
		doc, err := openapi3.NewLoader().LoadFromData(b)
		if err != nil {
			d.err = fmt.Errorf("load /openapi.json: %w", err)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			d.err = fmt.Errorf("/openapi.json is not a valid OpenAPI document: %w", err)
			return
		}
		if d.err = allowNullInUntypedSchemas(doc); d.err != nil {
			return
		}
		d.router, d.err = gorillamux.NewRouter(doc)
	})
	return d.router, d.err
}

// conform reports, as a test failure, a response the document does not
// describe: an undeclared status, content type, header or body shape.
func (h *host) conform(req *http.Request, status int, header http.Header, body []byte) {
	h.t.Helper()
	router, err := h.document()
	if err != nil {
		h.t.Errorf("OpenAPI document of %s: %v", h.url, err)
		return
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		// No operation: the host's catch-all answers a problem document,
		// or a browser opening a page outside the API the error page.
		want := "application/problem+json"
		if status == http.StatusNotFound && req.Method == http.MethodGet && req.Header.Get("HX-Request") == "" &&
			strings.Contains(req.Header.Get("Accept"), "text/html") && !strings.HasPrefix(req.URL.Path, "/api/") {
			want = "text/html; charset=utf-8"
		}
		if (status != http.StatusNotFound && status != http.StatusMethodNotAllowed) || header.Get("Content-Type") != want {
			h.t.Errorf("%s %s: %d %s for a route the OpenAPI document does not declare (%v)", req.Method, req.URL.Path, status, header.Get("Content-Type"), err)
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		h.t.Errorf("%s %s (operation %s): response %d does not match the OpenAPI document: %s", req.Method, req.URL.Path, route.Operation.OperationID, status, strings.ReplaceAll(err.Error(), "\n", " | "))
	}
}

// allowNullInUntypedSchemas spells out, as every type, the schemas that
// constrain no type, such as huma's for a field of type any. Both mean the
// same in OpenAPI 3.1, where an untyped schema accepts null. But kin-openapi
// (v0.153.0) validates a 3.1 schema that uses $ref and no 2020-12-only
// keyword with its OpenAPI 3.0 validator, which refuses null wherever no
// type lists it; without this, a null value of a field of type any would
// fail a response the document describes.
func allowNullInUntypedSchemas(doc *openapi3.T) error {
	every := openapi3.Types{openapi3.TypeArray, openapi3.TypeBoolean, openapi3.TypeInteger, openapi3.TypeNull, openapi3.TypeNumber, openapi3.TypeObject, openapi3.TypeString}
	return doc.WalkSchemas(func(_ string, ref *openapi3.SchemaRef) error {
		if v := ref.Value; v.Type == nil && v.IsEmpty() {
			v.Type = &every
		}
		return nil
	})
}

// TestOpenAPIDocument: every operation says who may call it, anonymous ones
// with an explicit empty security list, and declares the statuses the host
// answers around its handler, each with the headers the host sets on it;
// plugin operations as well as the host's.
func TestOpenAPIDocument(t *testing.T) {
	h := startHost(t, hostOpts{})
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string                     `json:"operationId"`
			Security    *[]map[string][]string     `json:"security"`
			Responses   map[string]json.RawMessage `json:"responses"`
			Extensions  string                     `json:"x-steward-plugin"`
		} `json:"paths"`
		Components struct {
			Headers map[string]struct {
				Required bool `json:"required"`
			} `json:"headers"`
		} `json:"components"`
	}
	h.get("/openapi.json", "").json(t, &doc)
	if len(doc.Paths) == 0 {
		t.Fatal("no paths")
	}
	content := func(path, method, status string) map[string]json.RawMessage {
		var r struct {
			Content map[string]json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(doc.Paths[path][method].Responses[status], &r)
		return r.Content
	}
	// The header a response declares, by the component it refers to.
	headers := func(path, method, status string) map[string]string {
		var r struct {
			Headers map[string]struct {
				Ref string `json:"$ref"`
			} `json:"headers"`
		}
		_ = json.Unmarshal(doc.Paths[path][method].Responses[status], &r)
		out := map[string]string{}
		for name, h := range r.Headers {
			out[name] = strings.TrimPrefix(h.Ref, "#/components/headers/")
		}
		return out
	}
	for component, required := range map[string]bool{"X-Request-Id": true, "X-RateLimit-Limit": true, "X-RateLimit-Remaining": true, "X-RateLimit-Reset": true,
		"Retry-After": true, "X-RateLimit-Limit.optional": false, "Retry-After.optional": false} {
		if h, ok := doc.Components.Headers[component]; !ok || h.Required != required {
			t.Errorf("header component %s: declared %v, required %v; want required %v", component, ok, h.Required, required)
		}
	}
	for path, item := range doc.Paths {
		for method, op := range item {
			name := method + " " + path
			for status := range op.Responses {
				declared := headers(path, method, status)
				want := []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}
				if status == "429" || status == "503" {
					want = append(want, "Retry-After")
				}
				for _, header := range want {
					if component := declared[header]; strings.TrimSuffix(component, ".optional") != header {
						t.Errorf("%s %s does not declare %s: %v", name, status, header, declared)
					}
				}
				if c := declared["X-RateLimit-Limit"]; (status == "413" || status == "500" || status == "503") != (c == "X-RateLimit-Limit.optional") {
					t.Errorf("%s %s: X-RateLimit-Limit is %s", name, status, c)
				}
				if c := declared["Retry-After"]; status == "429" && c != "Retry-After" {
					t.Errorf("%s 429: Retry-After is %q, want it required", name, c)
				}
			}
			if op.Security == nil {
				t.Errorf("%s declares no security requirement", name)
				continue
			}
			want := []string{"429"}
			if len(*op.Security) > 0 {
				want = append(want, "401", "403")
			}
			if op.Extensions != "" {
				want = append(want, "503", "504")
			}
			for _, status := range want {
				if _, ok := op.Responses[status]; !ok {
					t.Errorf("%s does not declare %s", name, status)
				} else if _, ok := content(path, method, status)["application/problem+json"]; !ok {
					t.Errorf("%s: %s is not a problem document", name, status)
				}
			}
		}
	}
	for _, c := range []struct{ path, mediaType string }{
		{"/metrics", "text/plain"}, {"/docs", "text/html"}, {"/onboarding/", "text/html"}, {"/openapi.json", "application/openapi+json"},
	} {
		if _, ok := content(c.path, "get", "200")[c.mediaType]; !ok {
			t.Errorf("GET %s is not declared as %s", c.path, c.mediaType)
		}
	}
	if sec := doc.Paths["/metrics"]["get"].Security; sec == nil || len(*sec) != 0 {
		t.Errorf("/metrics security %v, want an explicit []", sec)
	}
	if _, ok := content("/api/v1/testplugin/items", "get", "200")["application/json"]; !ok {
		t.Errorf("plugin operation without its response schema")
	}
}

// TestOpenAPILint: the document of a host running every plugin of the
// repository passes Redocly CLI's recommended rules with no error. make test
// installs the linter pinned in tools/openapilint and names it in
// STEWARD_TEST_REDOCLY; CI (STEWARD_TEST_REQUIRE_SERVICES=1) may not skip it.
func TestOpenAPILint(t *testing.T) {
	redocly := os.Getenv("STEWARD_TEST_REDOCLY")
	if redocly == "" {
		if os.Getenv("STEWARD_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("STEWARD_TEST_REDOCLY is not set: run the tests through make test, which installs Redocly CLI")
		}
		t.Skip("STEWARD_TEST_REDOCLY is not set; make test installs Redocly CLI and sets it")
	}
	h := startHost(t, hostOpts{pluginsHCL: defaultPlugins() + resourcesPlugins() + costPlugins("") + identityPlugins("") + compliancePlugins("") +
		partnerPlugins(examplePartnerCatalogue(t))})
	r := h.get("/openapi.json", "")
	if r.status != http.StatusOK {
		t.Fatalf("/openapi.json: %d", r.status)
	}
	doc := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(doc, r.body, 0o600); err != nil {
		t.Fatal(err)
	}
	config, err := filepath.Abs("../../tools/openapilint/redocly.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(redocly, "lint", "--config", config, "--format", "stylish", doc).CombinedOutput()
	if err != nil {
		t.Fatalf("redocly lint: %v\n%s", err, out)
	}
}
