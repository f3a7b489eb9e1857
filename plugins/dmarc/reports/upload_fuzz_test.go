package reports

import (
	"bytes"
	"context"
	"errors"
	"mime/multipart"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// multipartSeed is a form as a browser sends an upload: fields, then the
// file part named name.
func multipartSeed(fields [][2]string, name string, file []byte) (string, []byte) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.SetBoundary("fuzz-boundary")
	for _, kv := range fields {
		_ = w.WriteField(kv[0], kv[1])
	}
	if name != "" {
		fw, _ := w.CreateFormFile("file", name)
		_, _ = fw.Write(file)
	}
	_ = w.Close()
	return w.FormDataContentType(), buf.Bytes()
}

// FuzzReadUpload reads the body of a DMARC report upload as its route
// does, before the report is parsed: the file as the body, or in a
// multipart form with the tenant in a field the host does not check. An
// upload it accepts is for a tenant its caller may see, and the file name
// it keeps is text a database stores (valid UTF-8, no control character,
// clipped); one it refuses is a 4xx naming the input.
func FuzzReadUpload(f *testing.F) {
	doc := []byte(`<feedback><report_metadata><org_name>x</org_name></report_metadata></feedback>`)
	for _, seed := range []struct {
		ct   string
		body []byte
	}{
		{"application/xml", doc},
		{"application/gzip; charset=binary", []byte{0x1f, 0x8b, 0x08}},
		{"text/plain", doc},
		{"multipart/form-data", doc},
	} {
		f.Add(seed.ct, seed.body, true, false)
	}
	for _, form := range []struct {
		fields [][2]string
		name   string
	}{
		{[][2]string{{"tenant_id", "t-2"}}, "google.xml.gz"},
		{[][2]string{{"tenant_id", "t-3"}}, "r.xml"},
		{[][2]string{{"tenant_id", " t-1 "}, {"tenant_id", "t-3"}}, "r.xml"},
		{nil, "€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€.xml"},
		{nil, "a\x00b.xml"},
		{[][2]string{{"TENANT_ID", "t-3"}}, ""},
	} {
		ct, body := multipartSeed(form.fields, form.name, doc)
		f.Add(ct, body, false, true)
	}
	f.Add("multipart/form-data; boundary=b", []byte("--b\r\nContent-Disposition: form-data; name=\"file\"; filename*=UTF-8''a%00%C2%85%FF.xml\r\n\r\n<x/>\r\n--b--\r\n"), false, false)
	visible := []string{"t-1", "t-2"}
	f.Fuzz(func(t *testing.T, contentType string, body []byte, inQuery, oneTenant bool) {
		p := sdk.Principal{ID: "u-1", TenantIDs: visible}
		if oneTenant {
			p.TenantIDs = visible[:1]
		}
		in := &uploadIn{ContentType: contentType, RawBody: body}
		if inQuery {
			// Named in the query, the tenant is one the host has checked.
			in.Tenant = sdk.TenantID(p.TenantIDs[len(p.TenantIDs)-1])
		}
		ctx := sdk.WithRequestInfo(context.Background(), sdk.RequestInfo{Principal: p})
		file, name, tenantID, location, err := readUpload(ctx, in)
		if err != nil {
			var prob *sdk.Problem
			if !errors.As(err, &prob) || prob.Status < 400 || prob.Status >= 500 {
				t.Fatalf("refused with %v", err)
			}
			return
		}
		if !p.CanSee(tenantID) {
			t.Fatalf("an upload for tenant %q by a user of %v", tenantID, p.TenantIDs)
		}
		if !slices.Contains([]string{"body", "body.file"}, location) || (location == "body" && !bytes.Equal(file, body)) {
			t.Fatalf("the file at %q", location)
		}
		if protocol.ControlChars(name, false) || utf8.RuneCountInString(name) > 65 {
			t.Fatalf("file name %q", name)
		}
		if location == "body" && name != "" {
			t.Fatalf("a raw upload named %q", name)
		}
	})
}
