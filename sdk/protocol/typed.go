package protocol

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/core/store"
)

// This file is the typed route idiom the SDK's routes and the host's own
// operations share: the tenant input types, how an input type declares its
// tenant input, and how a handler's output type becomes huma's output.

// TenantIDs is a route input naming the tenants a request acts on: a query
// parameter (`query:"tenant_ids"`), repeated or comma-separated, or a
// member of the JSON body. The host refuses a request naming a tenant its
// caller may not see with a 403 before the handler sees it. Left empty by
// the caller, the handler receives every tenant the caller may see.
type TenantIDs []string

// Schema documents the parameter: at most 100 tenant ids.
func (TenantIDs) Schema(huma.Registry) *huma.Schema {
	maxLen, maxItems := 64, 100
	return &huma.Schema{Type: huma.TypeArray, MaxItems: &maxItems,
		Description: "Tenants to include (repeated or comma-separated); all the caller's tenants when absent. A tenant the caller may not see is a 403.",
		Items:       &huma.Schema{Type: huma.TypeString, MaxLength: &maxLen}}
}

// TenantID is a route input naming one tenant: a query or path parameter,
// or a member of the JSON body. The host refuses a request naming a tenant
// its caller may not see with a 403 before the handler sees it. Empty when
// the caller named none (a path parameter is never empty).
type TenantID string

// Schema documents the parameter.
func (TenantID) Schema(huma.Registry) *huma.Schema {
	maxLen := 64
	return &huma.Schema{Type: huma.TypeString, MaxLength: &maxLen,
		Description: "A tenant the caller may see; naming another is a 403."}
}

// Empty is the input of a route that takes none, or the output of one
// that answers without a body (204 unless the operation says otherwise).
type Empty struct{}

var (
	tenantIDsType = reflect.TypeFor[TenantIDs]()
	tenantIDType  = reflect.TypeFor[TenantID]()
)

// TenantField is where a typed route's input holds its tenant input.
type TenantField struct {
	Tenant
	// Index is the field's index path in the input struct.
	Index []int
	// Fill is set when it is a TenantIDs query or body member that an
	// omitted value fills with the caller's tenants.
	Fill bool
}

// Named lists the tenants a bound input (a pointer to the input struct)
// names in the field.
func (f *TenantField) Named(in any) []string {
	v := reflect.ValueOf(in).Elem().FieldByIndex(f.Index)
	switch ids := v.Interface().(type) {
	case TenantID:
		if ids != "" {
			return []string{string(ids)}
		}
	case TenantIDs:
		return ids
	}
	return nil
}

// FillEmpty sets the field of a bound input (a pointer to the input
// struct) to ids when it is a Fill field the caller left empty.
func (f *TenantField) FillEmpty(in any, ids []string) {
	if !f.Fill {
		return
	}
	if v := reflect.ValueOf(in).Elem().FieldByIndex(f.Index); v.Len() == 0 {
		v.Set(reflect.ValueOf(TenantIDs(ids)))
	}
}

// FindTenant finds the one TenantID or TenantIDs field of an input type:
// a query or path parameter, or a member of its Body struct.
func FindTenant(t reflect.Type) (*TenantField, error) {
	if t.Kind() != reflect.Struct {
		return nil, nil
	}
	found, err := tenantFields(t, nil)
	if err != nil {
		return nil, err
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%d tenant inputs; a route takes one", len(found))
}

// tenantFields collects the tenant inputs of an input struct, entering the
// structs it embeds as huma does; prefix is the index path to t.
func tenantFields(t reflect.Type, prefix []int) ([]*TenantField, error) {
	var found []*TenantField
	for f := range t.Fields() {
		f.Index = append(slices.Clone(prefix), f.Index...)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			inner, err := tenantFields(f.Type, f.Index)
			if err != nil {
				return nil, err
			}
			found = append(found, inner...)
			continue
		}
		if f.Type != tenantIDsType && f.Type != tenantIDType {
			if f.Name == "Body" {
				body := f.Type
				if body.Kind() == reflect.Pointer {
					body = body.Elem()
				}
				if body.Kind() != reflect.Struct {
					continue
				}
				for bf := range body.Fields() {
					if bf.Type != tenantIDsType && bf.Type != tenantIDType {
						continue
					}
					name, _, _ := strings.Cut(bf.Tag.Get("json"), ",")
					if name == "" || name == "-" {
						return nil, fmt.Errorf("body field %s: a tenant input needs a json name", bf.Name)
					}
					found = append(found, &TenantField{Tenant: Tenant{In: TenantInBody, Name: name},
						Index: append(f.Index, bf.Index...), Fill: bf.Type == tenantIDsType && f.Type.Kind() == reflect.Struct})
				}
			}
			continue
		}
		tf := &TenantField{Index: f.Index, Fill: f.Type == tenantIDsType}
		switch {
		case f.Tag.Get("query") != "":
			tf.In = TenantInQuery
			tf.Name, _, _ = strings.Cut(f.Tag.Get("query"), ",")
		case f.Tag.Get("path") != "":
			tf.In, tf.Name, tf.Fill = TenantInPath, f.Tag.Get("path"), false
		default:
			return nil, fmt.Errorf("field %s: a tenant input is a query or path parameter or a body member", f.Name)
		}
		found = append(found, tf)
	}
	return found, nil
}

// bodyOutput is the huma output of a handler whose output type is the
// response body itself.
type bodyOutput[O any] struct {
	Body *O
}

// RegisterTyped adds op to api served by a typed handler whose output O is
// the response body itself, unless it is a struct with a Body field (huma's
// output struct, whose other fields tagged `header` are response headers),
// or Empty for an answer without a body.
func RegisterTyped[I, O any](api huma.API, op huma.Operation, handler func(context.Context, *I) (*O, error)) {
	h := func(ctx context.Context, in *I) (*O, error) {
		out, err := handler(ctx, in)
		return out, DatabaseUnavailable(err)
	}
	ot := reflect.TypeFor[O]()
	switch {
	case ot == reflect.TypeFor[Empty]():
		huma.Register(api, op, func(ctx context.Context, in *I) (*struct{}, error) {
			if _, err := h(ctx, in); err != nil {
				return nil, err
			}
			return &struct{}{}, nil
		})
	case hasBody(ot):
		huma.Register(api, op, h)
	default:
		huma.Register(api, op, func(ctx context.Context, in *I) (*bodyOutput[O], error) {
			out, err := h(ctx, in)
			if err != nil {
				return nil, err
			}
			return &bodyOutput[O]{Body: out}, nil
		})
	}
}

// The details of a 503 answered while the database cannot be reached, and
// while its storage is full.
const (
	MsgDatabaseUnavailable = "the database is unavailable; retry shortly"
	MsgStorageFull         = "the database's storage is full: nothing was written; retry once space is freed"
)

// DatabaseProblem is the detail and Retry-After (seconds) of the 503 that
// answers err, an error store.Unavailable reports.
func DatabaseProblem(err error) (detail, retryAfter string) {
	if store.Full(err) {
		return MsgStorageFull, store.FullRetryAfter
	}
	return MsgDatabaseUnavailable, store.UnavailableRetryAfter
}

// DatabaseUnavailable turns an error saying the database cannot be reached
// or is full (store.Unavailable) into a 503 with Retry-After, and returns
// any other error as it is: a client should retry a request that met an
// outage, which a 500 would not tell it.
func DatabaseUnavailable(err error) error {
	var se huma.StatusError
	if err == nil || errors.As(err, &se) || !store.Unavailable(err) {
		return err
	}
	detail, retryAfter := DatabaseProblem(err)
	return huma.ErrorWithHeaders(huma.Error503ServiceUnavailable(detail), http.Header{"Retry-After": {retryAfter}})
}

// hasBody reports whether an output type is huma's output struct: a
// struct with a Body field.
func hasBody(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	_, ok := t.FieldByName("Body")
	return ok
}
