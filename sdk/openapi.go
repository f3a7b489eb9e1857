package sdk

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// SchemaOf returns the JSON Schema of v's type, for the responses of a
// Route's Operation, as huma derives it from the type's fields and tags. A
// nested type is written out in place rather than referred to: the
// operation travels to the host without the components a $ref would name.
// v's type must not contain itself.
func SchemaOf(v any) *huma.Schema {
	reg := huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)
	return inline(reg, reg.Schema(reflect.TypeOf(v), false, ""), nil)
}

// DatasetOf declares a dataset whose records are R's: its Schema is R's
// as SchemaOf derives it — json names, `doc`, `format` and the other tags,
// a member required unless its json tag says omitempty, null only where a
// field says `nullable:"true"`, and no member beyond R's — and read emits
// R values.
func DatasetOf[R any](name, description string, read func(ctx context.Context, req DatasetRequest, emit func(R) error) error) Dataset {
	schema, err := json.Marshal(SchemaOf(*new(R)))
	if err != nil {
		panic("sdk.DatasetOf: " + err.Error())
	}
	return Dataset{Name: name, Description: description, Schema: schema,
		Read: func(ctx context.Context, req DatasetRequest, emit func(any) error) error {
			return read(ctx, req, func(r R) error { return emit(r) })
		}}
}

// JSONResponse documents a JSON response whose body has v's shape.
func JSONResponse(description string, v any) *huma.Response {
	return &huma.Response{Description: description, Content: map[string]*huma.MediaType{"application/json": {Schema: SchemaOf(v)}}}
}

func inline(reg huma.Registry, s *huma.Schema, seen []string) *huma.Schema {
	if s == nil {
		return nil
	}
	if s.Ref != "" {
		for _, r := range seen {
			if r == s.Ref {
				panic("sdk.SchemaOf: type " + r + " contains itself")
			}
		}
		seen = append(seen, s.Ref)
		s = reg.SchemaFromRef(s.Ref)
	}
	out := *s
	if out.Properties != nil {
		out.Properties = make(map[string]*huma.Schema, len(s.Properties))
		for name, p := range s.Properties {
			out.Properties[name] = inline(reg, p, seen)
		}
	}
	out.Items = inline(reg, s.Items, seen)
	if ap, ok := s.AdditionalProperties.(*huma.Schema); ok {
		out.AdditionalProperties = inline(reg, ap, seen)
	}
	out.Not = inline(reg, s.Not, seen)
	for _, list := range []*[]*huma.Schema{&out.OneOf, &out.AnyOf, &out.AllOf} {
		if *list == nil {
			continue
		}
		cp := make([]*huma.Schema, len(*list))
		for i, e := range *list {
			cp[i] = inline(reg, e, seen)
		}
		*list = cp
	}
	return &out
}
