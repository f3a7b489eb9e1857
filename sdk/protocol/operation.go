package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// DecodeOperation reads a route's OpenAPI operation as a plugin's Describe
// sent it. huma writes a nullable schema the OpenAPI 3.1 way, as a type
// list such as ["array", "null"], but reads only a single type; such a
// list is read back as the type with nullable set, which huma writes out
// again as the same list. A schema must be inline: a $ref would name a
// component of the plugin's registry, which does not travel with it
// (sdk.SchemaOf inlines them).
func DecodeOperation(b []byte) (*huma.Operation, error) {
	var raw any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	if err := singleTypes(raw); err != nil {
		return nil, err
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var op huma.Operation
	if err := json.Unmarshal(b, &op); err != nil {
		return nil, err
	}
	// huma decodes no extension; an operation's own x- fields are kept, as
	// its encoder writes them back.
	if m, ok := raw.(map[string]any); ok {
		for k, v := range m {
			if strings.HasPrefix(k, "x-") {
				if op.Extensions == nil {
					op.Extensions = map[string]any{}
				}
				op.Extensions[k] = v
			}
		}
	}
	return &op, nil
}

func singleTypes(v any) error {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			return fmt.Errorf("schema $ref %q: schemas must be inline", ref)
		}
		if types, ok := v["type"].([]any); ok {
			var named []any
			for _, t := range types {
				if t == "null" {
					v["nullable"] = true
				} else {
					named = append(named, t)
				}
			}
			if len(named) != 1 {
				return errors.New("a schema's type list must name one type besides null")
			}
			v["type"] = named[0]
		}
		for _, e := range v {
			if err := singleTypes(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := singleTypes(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// OperationSlot is the field of item that holds method's operation, nil
// for a method a path item has no field for.
func OperationSlot(item *huma.PathItem, method string) **huma.Operation {
	switch method {
	case http.MethodGet:
		return &item.Get
	case http.MethodPost:
		return &item.Post
	case http.MethodPut:
		return &item.Put
	case http.MethodPatch:
		return &item.Patch
	case http.MethodDelete:
		return &item.Delete
	case http.MethodHead:
		return &item.Head
	case http.MethodOptions:
		return &item.Options
	}
	return nil
}
