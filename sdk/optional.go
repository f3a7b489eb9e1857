package sdk

import (
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// Optional is a query or header parameter of a typed route that a request
// may leave out, told apart from one it gives as the zero value: a field
// `query:"is_active"` of type sdk.Optional[bool]. Its bounds and doc are
// the field's tags, as any parameter's.
type Optional[T any] struct {
	Value T
	// Set is whether the request gave the parameter.
	Set bool
}

// Ptr is the value, or nil when the request gave none.
func (o Optional[T]) Ptr() *T {
	if !o.Set {
		return nil
	}
	return &o.Value
}

// Schema documents the parameter as the T it holds.
func (Optional[T]) Schema(r huma.Registry) *huma.Schema {
	return r.Schema(reflect.TypeFor[T](), false, "")
}

// Receiver is where huma parses the parameter.
func (o *Optional[T]) Receiver() reflect.Value { return reflect.ValueOf(&o.Value).Elem() }

// OnParamSet records whether the request gave the parameter.
func (o *Optional[T]) OnParamSet(isSet bool, _ any) { o.Set = isSet }
